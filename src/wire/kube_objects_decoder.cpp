// Decoding what the Kubernetes API sends: lists (one page each) and watch event lines, of pods, nodes,
// ResourceSlices, ResourceClaims, ResourceClaimTemplates and DeviceTaintRules.
#include "decoder_impl.h"
#include "common/case_insensitive.h"

namespace gpu_extender {
namespace {

using namespace wire;

ListMeta read_list_meta(od::value metadata) {
  ListMeta meta;
  if (take_null(metadata, "metadata")) return meta;
  for (auto f : take_object(metadata, "metadata")) {
    std::string_view key = field_key(f, "metadata");
    if (equals_ignore_case(key, "resourceVersion")) meta.resource_version = take_string(f.value(), "metadata.resourceVersion");
    else if (equals_ignore_case(key, "continue")) meta.continue_token = take_string(f.value(), "metadata.continue");
  }
  return meta;
}

// Walks {"metadata":{...},"items":[...]} calling decode_item(value, index) for each item.
template <typename DecodeItem>
ListMeta walk_list(od::document& doc, const char* what, DecodeItem&& decode_item) {
  ListMeta meta;
  bool seen_items = false;
  for (auto f : take(doc.get_object(), "", what)) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "metadata")) {
      meta = read_list_meta(take(f.value(), "metadata", "an object"));
    } else if (equals_ignore_case(key, "items")) {
      seen_items = true;
      od::value items = take(f.value(), "items", "an array");
      if (take_null(items, "items")) continue;
      size_t index = 0;
      for (auto item : take(items.get_array(), "items", "an array")) {
        try {
          decode_item(take(item, "", "an object"));
        } catch (DecodeError& e) {
          throw e.within("items[" + std::to_string(index) + "]");
        }
        ++index;
      }
    }
  }
  reject_trailing_content(doc);
  if (!seen_items) throw DecodeError("items", std::string("missing (expected ") + what + ")");
  return meta;
}

// First pass over an event line: its type, and for ERROR and BOOKMARK what they carry.
WatchEventHeader read_event_header(od::document& doc) {
  WatchEventHeader header;
  for (auto f : take(doc.get_object(), "", "a watch event object")) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "type")) {
      header.type = std::string(take_string(f.value(), "type"));
    } else if (equals_ignore_case(key, "object")) {
      // Status fields (ERROR) and metadata.resourceVersion (BOOKMARK); harmless for other objects.
      od::value object = take(f.value(), "object", "an object");
      for (auto o : take_object(object, "object")) {
        std::string_view okey = field_key(o, "object");
        if (equals_ignore_case(okey, "code")) {
          int64_t code = 0;
          if (!o.value().get_int64().get(code)) header.error_code = static_cast<int>(code);
        } else if (equals_ignore_case(okey, "message")) {
          std::string_view message;
          if (!o.value().get_string().get(message)) header.error_message = std::string(message);
        } else if (equals_ignore_case(okey, "metadata")) {
          od::value metadata = take(o.value(), "object.metadata", "an object");
          if (take_null(metadata, "object.metadata")) continue;
          for (auto m : take_object(metadata, "object.metadata"))
            if (equals_ignore_case(field_key(m, "object.metadata"), "resourceVersion"))
              header.resource_version = std::string(take_string(m.value(), "object.metadata.resourceVersion"));
        }
      }
    }
  }
  if (header.type.empty()) throw DecodeError("type", "missing");
  return header;
}

bool carries_object(const WatchEventHeader& h) {
  return h.type == "ADDED" || h.type == "MODIFIED" || h.type == "DELETED";
}

template <typename DecodeObject>
WatchEventHeader read_event(WireDecoder::Impl& impl, std::string_view line, DecodeObject&& decode_object) {
  WatchEventHeader header;
  {
    od::document doc = take(impl.iterate_copy(line), "", "a watch event object");
    header = read_event_header(doc);
  }
  if (!carries_object(header)) return header;
  od::document doc = take(impl.iterate_copy(line), "", "a watch event object");
  for (auto f : take(doc.get_object(), "", "a watch event object")) {
    if (!equals_ignore_case(field_key(f, ""), "object")) continue;
    try {
      decode_object(take(f.value(), "", "an object"));
    } catch (DecodeError& e) {
      throw e.within("object");
    }
  }
  return header;
}

// Each watched kind's objects: what its list is called in an error, and how one object is read.
template <typename Object>
struct Decoding;
template <>
struct Decoding<PodRequest> {
  static constexpr const char* kList = "a PodList, e.g. kubectl get pods -A -o json";
  static void decode(WireDecoder::Impl& impl, od::value v, const ViewSchema& schema, PodRequest& pod) {
    decode_pod(v, schema, pod, impl.pod_scratch);
  }
};
template <>
struct Decoding<NodeView> {
  static constexpr const char* kList = "a NodeList, e.g. kubectl get nodes -o json";
  static void decode(WireDecoder::Impl&, od::value v, const ViewSchema& schema, NodeView& node) { decode_node(v, schema, node); }
};
template <>
struct Decoding<ResourceSliceView> {
  static constexpr const char* kList = "a ResourceSliceList";
  static void decode(WireDecoder::Impl&, od::value v, const ViewSchema& schema, ResourceSliceView& slice) {
    decode_resource_slice(v, schema, slice);
  }
};
template <>
struct Decoding<ResourceClaimView> {
  static constexpr const char* kList = "a ResourceClaimList";
  static void decode(WireDecoder::Impl&, od::value v, const ViewSchema&, ResourceClaimView& claim) {
    decode_resource_claim(v, claim);
  }
};
template <>
struct Decoding<ResourceClaimTemplateView> {
  static constexpr const char* kList = "a ResourceClaimTemplateList";
  static void decode(WireDecoder::Impl&, od::value v, const ViewSchema&, ResourceClaimTemplateView& claim_template) {
    decode_resource_claim_template(v, claim_template);
  }
};
template <>
struct Decoding<DeviceTaintRuleView> {
  static constexpr const char* kList = "a DeviceTaintRuleList";
  static void decode(WireDecoder::Impl&, od::value v, const ViewSchema&, DeviceTaintRuleView& rule) {
    decode_device_taint_rule(v, rule);
  }
};

}  // namespace

template <typename Object>
ListMeta WireDecoder::decode_list(const std::string& body, const ViewSchema& schema,
                                  const std::function<void(const Object&)>& each) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  Object object;  // reused: each item is decoded over the last (their vectors keep their capacity)
  return walk_list(doc, Decoding<Object>::kList, [&](od::value item) {
    Decoding<Object>::decode(*impl_, item, schema, object);
    each(object);
  });
}

template <typename Object>
WatchEventHeader WireDecoder::decode_event(std::string_view line, const ViewSchema& schema, Object& object) {
  return read_event(*impl_, line, [&](od::value v) { Decoding<Object>::decode(*impl_, v, schema, object); });
}

// The watched objects (wire.h): one line each. (A type in an explicit instantiation cannot be
// parenthesized.)
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GPU_EXTENDER_WATCHED_OBJECT(Object)                                                                \
  template ListMeta WireDecoder::decode_list<Object>(const std::string&, const ViewSchema&,               \
                                                     const std::function<void(const Object&)>&);         \
  template WatchEventHeader WireDecoder::decode_event<Object>(std::string_view, const ViewSchema&, Object&);
GPU_EXTENDER_WATCHED_OBJECT(PodRequest)
GPU_EXTENDER_WATCHED_OBJECT(NodeView)
GPU_EXTENDER_WATCHED_OBJECT(ResourceSliceView)
GPU_EXTENDER_WATCHED_OBJECT(ResourceClaimView)
GPU_EXTENDER_WATCHED_OBJECT(ResourceClaimTemplateView)
GPU_EXTENDER_WATCHED_OBJECT(DeviceTaintRuleView)
#undef GPU_EXTENDER_WATCHED_OBJECT
// NOLINTEND(bugprone-macro-parentheses)

PodRequest WireDecoder::decode_pod_object(const std::string& body, const ViewSchema& schema) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  PodRequest pod;
  decode_pod(take(doc.get_value(), "", "a Pod object"), schema, pod, impl_->pod_scratch);
  reject_trailing_content(doc);
  return pod;
}

}  // namespace gpu_extender
