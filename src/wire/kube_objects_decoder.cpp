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
WatchEventHeader decode_event(WireDecoder::Impl& impl, std::string_view line, DecodeObject&& decode_object) {
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

}  // namespace

ListMeta WireDecoder::decode_pod_list(const std::string& body, const ViewSchema& schema,
                                      const std::function<void(const PodRequest&)>& on_pod) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  PodRequest pod;
  return walk_list(doc, "a PodList, e.g. kubectl get pods -A -o json", [&](od::value item) {
    decode_pod(item, schema, pod, impl_->pod_scratch);
    on_pod(pod);
  });
}

ListMeta WireDecoder::decode_node_list(const std::string& body, const ViewSchema& schema,
                                       const std::function<void(const NodeView&)>& on_node) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  NodeView node;
  return walk_list(doc, "a NodeList, e.g. kubectl get nodes -o json", [&](od::value item) {
    decode_node(item, schema, node);
    on_node(node);
  });
}

ListMeta WireDecoder::decode_resource_slice_list(const std::string& body, const ViewSchema& schema,
                                                 const std::function<void(const ResourceSliceView&)>& on_slice) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  ResourceSliceView slice;
  return walk_list(doc, "a ResourceSliceList", [&](od::value item) {
    decode_resource_slice(item, schema, slice);
    on_slice(slice);
  });
}

WatchEventHeader WireDecoder::decode_resource_slice_event(std::string_view line, const ViewSchema& schema,
                                                          ResourceSliceView& slice) {
  return decode_event(*impl_, line, [&](od::value object) { decode_resource_slice(object, schema, slice); });
}

ListMeta WireDecoder::decode_resource_claim_list(const std::string& body,
                                                 const std::function<void(const ResourceClaimView&)>& on_claim) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  ResourceClaimView claim;
  return walk_list(doc, "a ResourceClaimList", [&](od::value item) {
    decode_resource_claim(item, claim);
    on_claim(claim);
  });
}

WatchEventHeader WireDecoder::decode_resource_claim_event(std::string_view line, ResourceClaimView& claim) {
  return decode_event(*impl_, line, [&](od::value object) { decode_resource_claim(object, claim); });
}

ListMeta WireDecoder::decode_resource_claim_template_list(
    const std::string& body, const std::function<void(const ResourceClaimView&)>& on_template) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  ResourceClaimView claim_template;
  return walk_list(doc, "a ResourceClaimTemplateList", [&](od::value item) {
    decode_resource_claim_template(item, claim_template);
    on_template(claim_template);
  });
}

WatchEventHeader WireDecoder::decode_resource_claim_template_event(std::string_view line, ResourceClaimView& claim_template) {
  return decode_event(*impl_, line, [&](od::value object) { decode_resource_claim_template(object, claim_template); });
}

ListMeta WireDecoder::decode_device_taint_rule_list(const std::string& body,
                                                    const std::function<void(const DeviceTaintRuleView&)>& on_rule) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  DeviceTaintRuleView rule;
  return walk_list(doc, "a DeviceTaintRuleList", [&](od::value item) {
    decode_device_taint_rule(item, rule);
    on_rule(rule);
  });
}

WatchEventHeader WireDecoder::decode_device_taint_rule_event(std::string_view line, DeviceTaintRuleView& rule) {
  return decode_event(*impl_, line, [&](od::value object) { decode_device_taint_rule(object, rule); });
}

PodRequest WireDecoder::decode_pod_object(const std::string& body, const ViewSchema& schema) {
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  PodRequest pod;
  decode_pod(take(doc.get_value(), "", "a Pod object"), schema, pod, impl_->pod_scratch);
  reject_trailing_content(doc);
  return pod;
}

WatchEventHeader WireDecoder::decode_pod_event(std::string_view line, const ViewSchema& schema, PodRequest& pod) {
  return decode_event(*impl_, line, [&](od::value object) { decode_pod(object, schema, pod, impl_->pod_scratch); });
}

WatchEventHeader WireDecoder::decode_node_event(std::string_view line, const ViewSchema& schema, NodeView& node) {
  return decode_event(*impl_, line, [&](od::value object) { decode_node(object, schema, node); });
}

}  // namespace gpu_extender
