// ExtenderPreemptionArgs in, ExtenderPreemptionResult out.
//   in:  {"Pod":{...},"NodeNameToVictims":{"n":{"Pods":[{pod}...],"NumPDBViolations":0}}|null,
//         "NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"..."}],"NumPDBViolations":0}}|null}
//   out: {"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"..."}],"NumPDBViolations":0}}}
#include "decoder_impl.h"
#include "common/case_insensitive.h"
#include "common/json_writer.h"
#include "gpu_extender/wire/wire_encode.h"

namespace gpu_extender {
namespace {

using namespace wire;

void decode_victims(od::value victims_map, bool meta, const ViewSchema& schema, PreemptionArgs& args,
                    PodScratch& scratch) {
  for (auto entry : take_object(victims_map, "")) {
    PreemptionCandidate& candidate = args.candidates.emplace_back();
    candidate.node = field_key(entry, "");
    try {
      od::value victims = take(entry.value(), "", "an object");
      if (take_null(victims, "")) continue;
      for (auto f : take_object(victims, "")) {
        std::string_view key = field_key(f, "");
        if (equals_ignore_case(key, "NumPDBViolations")) {
          candidate.pdb_violations = take(f.value().get_int64(), "NumPDBViolations", "an integer");
        } else if (equals_ignore_case(key, "Pods")) {
          od::value pods = take(f.value(), "Pods", "an array");
          if (take_null(pods, "Pods")) continue;
          size_t index = 0;
          for (auto item : take(pods.get_array(), "Pods", "an array")) {
            PreemptionCandidate::Victim& victim = candidate.victims.emplace_back();
            try {
              od::value pod = take(item, "", "an object");
              if (meta) {
                for (auto m : take_object(pod, ""))
                  if (equals_ignore_case(field_key(m, ""), "UID")) victim.uid = take_string(m.value(), "UID");
              } else {
                PodRequest decoded;
                decode_pod(pod, schema, decoded, scratch);
                victim.uid = decoded.uid;
                victim.node_name = decoded.node_name;
                victim.requests = decoded.requests;
              }
              if (victim.uid.empty()) throw DecodeError(meta ? "UID" : "metadata.uid", "missing");
            } catch (DecodeError& e) {
              throw e.within("Pods[" + std::to_string(index) + "]");
            }
            ++index;
          }
        }
      }
    } catch (DecodeError& e) {
      throw e.within(std::string(meta ? "NodeNameToMetaVictims." : "NodeNameToVictims.") + std::string(candidate.node));
    }
  }
}

}  // namespace

PreemptionArgs& WireDecoder::decode_preemption_args(const std::string& body, const ViewSchema& schema) {
  PreemptionArgs& args = impl_->preemption;
  args = PreemptionArgs{};
  od::document doc = take(impl_->iterate(body), "", "a JSON object");
  validate_document(doc);  // including the fields not read
  bool seen_pod = false, has_full = false, has_meta = false;
  for (auto f : take(doc.get_object(), "", "a JSON object (ExtenderPreemptionArgs)")) {
    std::string_view key = field_key(f, "");
    if (equals_ignore_case(key, "Pod")) {
      decode_extender_pod(take(f.value(), "Pod", "an object"), seen_pod, schema, args.pod, impl_->pod_scratch);
    } else if (equals_ignore_case(key, "NodeNameToVictims") || equals_ignore_case(key, "NodeNameToMetaVictims")) {
      const bool meta = equals_ignore_case(key, "NodeNameToMetaVictims");
      od::value map = take(f.value(), key, "an object");
      if (take_null(map, key)) continue;
      if (has_full || has_meta) throw DecodeError(std::string(key), "both NodeNameToVictims and NodeNameToMetaVictims given");
      (meta ? has_meta : has_full) = true;
      decode_victims(map, meta, schema, args, impl_->pod_scratch);
    }
  }
  reject_trailing_content(doc);
  if (!seen_pod) throw DecodeError("Pod", "missing");
  if (!has_full && !has_meta)
    throw DecodeError("NodeNameToVictims", "neither NodeNameToVictims nor NodeNameToMetaVictims is given");
  args.meta_victims = has_meta;
  return args;
}

void encode_preemption_result(const PreemptionArgs& args, const std::vector<bool>& keep, std::string& out) {
  out += "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  for (size_t i = 0; i < args.candidates.size(); ++i) {
    if (!keep[i]) continue;
    const PreemptionCandidate& c = args.candidates[i];
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, c.node);
    out += ":{\"Pods\":[";
    for (size_t v = 0; v < c.victims.size(); ++v) {
      if (v) out.push_back(',');
      out += "{\"UID\":";
      append_json_string(out, c.victims[v].uid);
      out.push_back('}');
    }
    out += "],\"NumPDBViolations\":";
    append_json_int(out, c.pdb_violations);
    out.push_back('}');
  }
  out += "}}";
}

}  // namespace gpu_extender
