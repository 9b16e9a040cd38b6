// Decoding ExtenderBindingArgs: {"PodName","PodNamespace","PodUID","Node"}.
#include "decoder_impl.h"
#include "common/case_insensitive.h"

namespace gpu_extender {

BindingArgs WireDecoder::decode_binding_args(const std::string& body) {
  using namespace wire;
  BindingArgs args;
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  validate_document(doc);  // including the fields not read
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

}  // namespace gpu_extender
