#pragma once
// How deep a JSON text nests, found by one linear scan before any parser builds a tree of it: nlohmann's
// parser is iterative, but copying, dumping, comparing and patching its values recurse once per level,
// so a body of 200,000 `[` would overflow the stack of whichever of them touches it first.
#include <cstddef>
#include <string_view>

namespace gpu_extender::admission {

// Whether `text` opens more than `limit` arrays or objects inside one another. Brackets inside strings do
// not count (a backslash escapes the character after it, as in JSON). On text that is not JSON the scan
// still bounds what a parser builds: up to the first byte a parser refuses, the text is a prefix of JSON,
// where this scan and the parser's lexer agree on every string's bounds, hence on the depth; after it,
// the parser builds nothing more.
inline bool json_nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace gpu_extender::admission
