#include "api_binder.h"

#include <thread>

#include "common/json_writer.h"

namespace gpu_extender::kube {

std::string binding_json(const BindingArgs& args) {
  std::string out = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)";
  append_json_string(out, args.pod_name);
  out += ",\"namespace\":";
  append_json_string(out, args.pod_namespace);
  if (!args.pod_uid.empty()) {
    out += ",\"uid\":";  // a precondition: the API server refuses if the pod was replaced meanwhile
    append_json_string(out, args.pod_uid);
  }
  out += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)";
  append_json_string(out, args.node);
  out += "}}";
  return out;
}

std::string annotations_patch_json(const std::string& uid, const Binder::Annotations& annotations) {
  std::string out = R"({"metadata":{"uid":)";
  append_json_string(out, uid);
  out += R"(,"annotations":{)";
  for (size_t i = 0; i < annotations.size(); ++i) {
    if (i) out += ",";
    append_json_string(out, annotations[i].first);
    out += ":";
    if (annotations[i].second) append_json_string(out, *annotations[i].second);
    else out += "null";
  }
  out += "}}}";
  return out;
}

ApiBinder::ApiBinder(std::shared_ptr<const ApiClient> api, ViewSchema schema, std::chrono::milliseconds deadline)
    : api_(std::move(api)), schema_(std::move(schema)), deadline_(deadline) {}

namespace {
std::string pod_path(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

// What a person can act on, for the answers that mean the same for every call about a pod; "" for others.
std::string common_refusal(const std::string& pod, const ApiResponse& res, const char* verb) {
  switch (res.status) {
    case 404:
      return "cannot bind pod " + pod + ": the pod no longer exists (" + res.describe() + ")";
    case 401:
      return "cannot bind pod " + pod + ": the API server refused the extender's credentials (401 Unauthorized)";
    case 403:
      return "cannot bind pod " + pod + ": forbidden; the extender's role needs " + verb + " (" + res.describe() + ")";
    default:
      return "";
  }
}

// Calls `call(timeout)` again after 5xx, 429 and transport errors, with backoff, until `budget` is
// spent; returns the last answer and counts the attempts.
template <typename Call>
ApiResponse with_retries(std::chrono::milliseconds budget, int& attempts, const Call& call) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + budget;
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    ++attempts;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    ApiResponse res = call(std::max(left, std::chrono::milliseconds(100)));
    const bool retriable = res.status == 0 || res.status >= 500 || res.status == 429;
    if (res.ok() || !retriable || Clock::now() + backoff >= deadline) return res;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}
}  // namespace

Binder::Fetched ApiBinder::fetch_pod(const std::string& ns, const std::string& name) {
  Fetched out;
  const ApiResponse res = api_->get(pod_path(ns, name), std::chrono::seconds(2));
  if (!res.ok()) {
    std::string refusal = common_refusal(ns + "/" + name, res, "get on pods");
    if (refusal.empty()) refusal = "cannot bind pod " + ns + "/" + name + ": cannot read it: " + res.describe();
    out.status = Status::failed(std::move(refusal));
    return out;
  }
  try {
    WireDecoder decoder;
    out.pod = PendingPod::of(decoder.decode_pod_object(res.body, schema_));
  } catch (const DecodeError& e) {
    out.status = Status::failed("cannot bind pod " + ns + "/" + name + ": cannot read it: " + e.what());
  }
  return out;
}

Status ApiBinder::annotate(const std::string& ns, const std::string& name, const std::string& uid,
                                const Annotations& annotations) {
  const std::string pod = ns + "/" + name;
  const std::string body = annotations_patch_json(uid, annotations);
  int attempts = 0;
  const ApiResponse res = with_retries(deadline_, attempts, [&](std::chrono::milliseconds timeout) {
    return api_->merge_patch(pod_path(ns, name), body, timeout);
  });
  if (res.ok()) return Status::done();
  std::string refusal = common_refusal(pod, res, "patch on pods");
  if (!refusal.empty()) return Status::failed(std::move(refusal));
  if (res.status == 422 || res.status == 409)
    return Status::failed("cannot bind pod " + pod + ": it was deleted and re-created (" + res.describe() + ")");
  return Status::failed("cannot annotate pod " + pod + ": " + res.describe());
}

Status ApiBinder::bind(const BindingArgs& args) {
  const std::string pod = args.pod_namespace + "/" + args.pod_name;
  const std::string path = pod_path(args.pod_namespace, args.pod_name);
  const std::string body = binding_json(args);
  int attempts = 0;
  const ApiResponse res = with_retries(deadline_, attempts, [&](std::chrono::milliseconds timeout) {
    return api_->post(path + "/binding", body, timeout);
  });
  if (res.ok()) return Status::done();
  switch (res.status) {
    case 409: {
      // Already bound: success if to this very node (a retried bind after a lost answer).
      const ApiResponse current = api_->get(path, std::chrono::seconds(2));
      if (current.ok()) {
        WireDecoder decoder;
        try {
          const PodRequest existing = decoder.decode_pod_object(current.body, schema_);
          // Success only if it is this very pod (not one re-created under the same name) on this node.
          if (existing.uid != args.pod_uid)
            return Status::failed("cannot bind pod " + pod + ": it was deleted and re-created (UID " + std::string(existing.uid) +
                   ", not " + args.pod_uid + ")");
          if (existing.node_name == args.node) return Status::done();
          if (!existing.node_name.empty())
            return Status::failed("pod " + pod + " is already bound to node " + std::string(existing.node_name) + ", not " + args.node);
        } catch (const DecodeError&) {
        }
      }
      return Status::failed("cannot bind pod " + pod + " to " + args.node + ": conflict (" + res.describe() + ")");
    }
    case 404:
    case 401:
    case 403:
      return Status::failed(common_refusal(pod, res, "create on pods/binding"));
    default:
      return Status::failed("cannot bind pod " + pod + " to " + args.node + " after " + std::to_string(attempts) +
             " attempt(s): " + res.describe());
  }
}

}  // namespace gpu_extender::kube
