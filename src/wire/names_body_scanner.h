#pragma once
// Names mode's fast path. kube-scheduler's names-mode body is always the same plain shape:
//   {"Pod":{...},"Nodes":null,"NodeNames":["name",...]}
// and its bulk, 5,000 DNS names (~220 KB), is the part On Demand handles least well: it indexes every
// quote and comma, then walks each name as a value. This scanner recognises that shape and reads the
// names itself, 16 bytes at a time, leaving only the Pod (~2 KB) to simdjson.
//
// It decides nothing on its own: whenever the body strays from the plain shape (other keys, other
// letter case, a duplicate key, a name with an escape, a control or non-ASCII byte, a value that is not
// what the shape says, trailing bytes), it answers "not plain" and the general decoder reads the body
// from the start, with its errors. The fuzz target extender_names_scanner checks that both decoders
// agree on every input the scanner accepts.
#include <string_view>
#include <vector>

namespace gpu_extender::wire {

struct PlainNamesBody {
  std::string_view pod;  // the Pod value's bytes, from '{' to its '}': still to be parsed and validated
  std::vector<std::string_view>* names;  // appended to: views into the body, escapes-free by construction
  std::string_view names_json;           // the NodeNames array's bytes, '[' to ']'
  bool names_compact = false;            // the array was Go's compact form, read 64 bytes at a time
};

// Whether `body` has the plain shape; if so, its names are appended to *out.names and out.pod is set.
// `readable_end` is how far past the body bytes may be read (its padding), at least 15 bytes past it.
bool scan_plain_names_body(std::string_view body, const char* readable_end, PlainNamesBody& out);

}  // namespace gpu_extender::wire
