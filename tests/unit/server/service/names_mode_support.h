#pragma once
// Names mode's test bed, shared by the verdict memo's and the score memo's tests: two A100 nodes (small:
// 1 GPU, large: 8) in a synced cluster view, and a names-mode body for a pod that asks GPUs of them
// and of a node the view lacks.
#include <memory>
#include <string>
#include <string_view>

#include "gpu_extender/state/cluster_view.h"
#include "state/cluster_view_writes.h"

namespace names_mode_support {

inline std::shared_ptr<gpu_extender::ClusterView> two_node_cluster(const gpu_extender::ViewSchema& schema) {
  auto view = std::make_shared<gpu_extender::ClusterView>();
  gpu_extender::WireDecoder decoder;
  gpu_extender::NodeView node;
  for (const char* name : {"small", "large"}) {
    const int gpus = std::string_view(name) == "small" ? 1 : 8;
    const std::string event = std::string(R"({"type":"ADDED","object":{"metadata":{"name":")") + name +
                              R"(","labels":{"gpu.nvidia.com/model":"A100","gpu.nvidia.com/count":")" +
                              std::to_string(gpus) + R"("}},"status":{"allocatable":{"nvidia.com/gpu":")" +
                              std::to_string(gpus) + R"("}}}})";
    decoder.decode_event<gpu_extender::NodeView>(event, schema, node);
    view->upsert<gpu_extender::stored::Nodes>(gpu_extender::test_write(), node);
  }
  view->mark_nodes_synced(gpu_extender::test_write());
  view->mark_pods_synced(gpu_extender::test_write());
  return view;
}

inline std::string names_body(const std::string& uid, int gpus, const std::string& annotations = "{}") {
  return R"({"Pod":{"metadata":{"name":"p-)" + uid + R"(","namespace":"ml","uid":")" + uid +
         R"(","annotations":)" + annotations +
         R"(},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":")" + std::to_string(gpus) +
         R"("}}}]}},"NodeNames":["small","large","unknown"]})";
}

}  // namespace names_mode_support
