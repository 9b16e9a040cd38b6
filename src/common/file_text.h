#pragma once
// Reading a whole file: the one helper every loader uses (policy, snapshots, kubeconfig, certificates,
// tokens, tool inputs). Thread-safe.
#include <optional>
#include <string>

namespace gpu_extender {

// The file's bytes, or nullopt when it cannot be opened.
std::optional<std::string> read_file_text(const std::string& path);

// A Kubernetes object file (kubectl get -o json or -o yaml) as JSON text: JSON as it is, YAML
// converted. The server's --pods-snapshot and the tools' inputs all read files this way. Throws
// std::runtime_error naming the file.
std::string load_object_file(const std::string& path);

}  // namespace gpu_extender
