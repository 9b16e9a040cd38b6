// Decoding ExtenderBindingArgs: {"PodName","PodNamespace","PodUID","Node"}.
#include "decoder_impl.h"
#include "gpu_extender/case_insensitive.h"

namespace gpu_extender {

BindingArgs WireDecoder::decode_binding_args(const std::string& body) {
  using namespace wire;
  BindingArgs args;
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  for (auto f : take(doc.get_object(), "", "a JSON object (ExtenderBindingArgs)")) {
    std::string_view key = field_key(f, "");
    std::string* target = nullptr;
    if (equals_ignore_case(key, "PodName")) target = &args.pod_name;
    else if (equals_ignore_case(key, "PodNamespace")) target = &args.pod_namespace;
    else if (equals_ignore_case(key, "PodUID")) target = &args.pod_uid;
    else if (equals_ignore_case(key, "Node")) target = &args.node;
    if (target) target->assign(take_string(f.value(), key));
  }
  wire::reject_trailing_content(doc);
  if (args.pod_name.empty()) throw DecodeError("PodName", "missing");
  if (args.pod_namespace.empty()) throw DecodeError("PodNamespace", "missing");
  if (args.node.empty()) throw DecodeError("Node", "missing");
  return args;
}

void WireDecoder::decode_pod_list(const std::string& body, const ViewSchema& schema,
                                  const std::function<void(const PodRequest&)>& on_pod) {
  using namespace wire;
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  PodRequest pod;
  bool seen_items = false;
  for (auto f : take(doc.get_object(), "", "a JSON object (PodList)")) {
    if (!equals_ignore_case(field_key(f, ""), "items")) continue;
    seen_items = true;
    od::value items = take(f.value(), "items", "an array");
    if (take_null(items, "items")) continue;
    size_t index = 0;
    for (auto item : take(items.get_array(), "items", "an array")) {
      try {
        decode_pod(take(item, "", "a pod object"), schema, pod, impl_->pod_scratch);
      } catch (DecodeError& e) {
        throw e.within("items[" + std::to_string(index) + "]");
      }
      on_pod(pod);
      ++index;
    }
  }
  if (!seen_items) throw DecodeError("items", "missing (expected a PodList, e.g. kubectl get pods -A -o json)");
}

}  // namespace gpu_extender
