// Reading the object files users hand the server and the tools: kubectl output in JSON or YAML.
#include "file_text.h"
#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "json_writer.h"

namespace gpu_extender {
namespace {

bool plain_json_scalar(const std::string& s) {
  if (s == "true" || s == "false" || s == "null") return true;
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size()) return false;
  bool digits = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') digits = true;
    else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return false;
  }
  return digits && s.find_first_of("eE.") == std::string::npos;  // integers only: quantities stay strings
}

void to_json(const YAML::Node& node, std::string& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : node) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, kv.first.Scalar());
        out.push_back(':');
        to_json(kv.second, out);
      }
      out.push_back('}');
      break;
    }
    case YAML::NodeType::Sequence: {
      out.push_back('[');
      for (size_t i = 0; i < node.size(); ++i) {
        if (i) out.push_back(',');
        to_json(node[i], out);
      }
      out.push_back(']');
      break;
    }
    case YAML::NodeType::Scalar:
      // Unquoted integers and booleans keep their JSON type; everything else is a string.
      if (node.Tag() == "?" && plain_json_scalar(node.Scalar())) out += node.Scalar();
      else append_json_string(out, node.Scalar());
      break;
    default:
      out += "null";
  }
}

}  // namespace

std::string load_object_file(const std::string& path) {
  const std::optional<std::string> text = read_file_text(path);
  if (!text) throw std::runtime_error(path + ": cannot be read");
  const std::string& content = *text;
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (content[first] == '{' || content[first] == '[')) return content;
  try {
    std::string json;
    to_json(YAML::Load(content), json);
    return json;
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ": neither JSON nor valid YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace gpu_extender
