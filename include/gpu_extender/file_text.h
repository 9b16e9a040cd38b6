#pragma once
// Reading a whole file: the one helper every loader uses (policy, snapshots, kubeconfig, certificates,
// tokens, tool inputs). Thread-safe.
#include <optional>
#include <string>

namespace gpu_extender {

// The file's bytes, or nullopt when it cannot be opened.
std::optional<std::string> read_file_text(const std::string& path);

}  // namespace gpu_extender
