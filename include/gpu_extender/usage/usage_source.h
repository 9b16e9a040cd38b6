#pragma once
// Where the policy learns what is in use on each node (GPUs, packed resource): the pods bound there.
//
// One interface, several sources: none (usage unknown: filters check capacity only, idleness from
// annotations only), a pods snapshot file (`kubectl get pods -A -o json`), and the live watch of the
// API server. Implementations are thread-safe: request threads call used_on() concurrently.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpu_extender/common/resources.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

class UsageSource {
 public:
  virtual ~UsageSource() = default;
  // Amounts in use on `node`, or nullopt when this source does not know.
  virtual std::optional<ResourceAmounts> used_on(std::string_view node) const = 0;
  // For logs and /version: "none", "pods snapshot FILE (N pods on M nodes)".
  virtual std::string describe() const = 0;
};

// Usage unknown everywhere.
std::unique_ptr<UsageSource> make_no_usage();

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using UsageByNode = std::unordered_map<std::string, ResourceAmounts, StringHash, std::equal_to<>>;

// Usage from a PodList file: every pod with spec.nodeName that has not Succeeded or Failed counts with
// its effective requests. Nodes without such pods have nothing in use. Immutable once loaded.
class PodsSnapshotUsage final : public UsageSource {
 public:
  // Throws std::runtime_error naming the file and the field on bad input.
  static std::unique_ptr<PodsSnapshotUsage> load(const std::string& path, const ViewSchema& schema);
  static std::unique_ptr<PodsSnapshotUsage> from_text(const std::string& text, const ViewSchema& schema,
                                                      std::string source_name);

  std::optional<ResourceAmounts> used_on(std::string_view node) const override;
  std::string describe() const override;
  const UsageByNode& by_node() const { return by_node_; }

 private:
  UsageByNode by_node_;
  std::string source_;
  size_t pods_counted_ = 0;
};

}  // namespace gpu_extender
