#include "names_body_scanner.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <optional>

#include "gpu_extender/wire/wire.h"
#include "json_access.h"

namespace gpu_extender::wire {
namespace {

#if defined(__SSE2__)
// One bit per byte (bit i for p[i]): which are quotes, and which may not appear in a plain string
// ('\\', a control byte, a byte above 0x7F).
struct ByteBits {
  uint64_t quote = 0, special = 0;
};

// The bits of the 16 bytes from p.
ByteBits bits_of_16(const char* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // Signed compare: below 0x20 catches control bytes and, as negatives, every byte above 0x7F.
  const __m128i special = _mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\')),
                                       _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20)));
  return {static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')))),
          static_cast<unsigned>(_mm_movemask_epi8(special))};
}

// The bits of the 64 bytes from p.
ByteBits bits_of_block(const char* p) {
  ByteBits bits;
  for (size_t part = 0; part < 4; ++part) {
    const ByteBits b = bits_of_16(p + 16 * part);
    bits.quote |= b.quote << (16 * part);
    bits.special |= b.special << (16 * part);
  }
  return bits;
}

// Bit i: the parity of the bits 0..i. Of the quote bits: set from an opening quote up to (not
// including) its closing one.
uint64_t prefix_parity(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}
#endif

// Reads a body left to right; every `expect` or scan either advances or reports "not plain".
class Cursor {
 public:
  Cursor(std::string_view body, const char* readable_end)
      : at_(body.data()), end_(body.data() + body.size()), readable_end_(readable_end) {}

  void skip_space() {
    while (at_ < end_ && is_json_space(*at_)) ++at_;
  }
  bool at_end() const { return at_ == end_; }
  const char* position() const { return at_; }
  bool take(char c) {
    skip_space();
    if (at_ == end_ || *at_ != c) return false;
    ++at_;
    return true;
  }
  bool take_word(std::string_view word) {
    skip_space();
    if (static_cast<size_t>(end_ - at_) < word.size() || std::string_view(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  // A string of plain bytes: printable ASCII but '"' and '\\' (no escape to undo, nothing for UTF-8 to
  // check). False for anything else, which the general decoder will read.
  bool take_plain_string(std::string_view& out) {
    if (!take('"')) return false;
    const char* start = at_;
    const char* stop = find_special(start);
    if (stop == nullptr || *stop != '"') return false;
    out = std::string_view(start, static_cast<size_t>(stop - start));
    at_ = stop + 1;
    return true;
  }
  // The strings of an array in its compact form, as Go's encoder writes it: "a","b",...,"z"] with no
  // white space, every string plain, from here (just after the '[') to the ']', 64 bytes at a time.
  // False, with nothing taken and `names` as it was, for any other form: the caller reads it byte by
  // byte then.
  bool take_compact_strings(std::vector<std::string_view>& names) {
#if defined(__SSE2__)
    if (at_ == end_ || *at_ != '"') return false;
    const size_t first = names.size();
    uint64_t carried_string = 0;  // all ones when the last block ended inside a string
    const char* open = nullptr;   // the first byte of a string still open at the end of the last block
    for (const char* p = at_; p < end_ && p + 64 <= readable_end_; p += 64) {
      const ByteBits bits = bits_of_block(p);
      // No escape is taken, so every quote delimits a string: their parity says which bytes are in one.
      const uint64_t inside = prefix_parity(bits.quote) ^ carried_string;  // opening quotes and string bytes
      // The first byte in a string that is not plain (it may lie past the array's end: then no name
      // reaches it).
      const uint64_t not_plain = bits.special & inside;
      const char* first_not_plain = not_plain != 0 ? p + __builtin_ctzll(not_plain) : nullptr;
      uint64_t opens = bits.quote & inside, closes = bits.quote & ~inside;
      // Each closing quote is followed by `,"` (the next string) or by the array's ']'; the k-th one
      // ends the k-th string opened (the first, maybe, in an earlier block).
      for (; closes != 0; closes &= closes - 1) {
        const char* close = p + __builtin_ctzll(closes);
        const char* from = open;
        if (from == nullptr) {
          from = p + __builtin_ctzll(opens) + 1;
          opens &= opens - 1;
        }
        open = nullptr;
        if (first_not_plain != nullptr && first_not_plain < close) break;
        if (names.size() >= kMaxNodesPerRequest) break;  // too many: the byte-by-byte reading says so
        names.emplace_back(from, static_cast<size_t>(close - from));
        if (close[1] == ']' && close + 1 < end_) {
          at_ = close + 2;
          return true;
        }
        if (close[1] != ',' || close[2] != '"') break;
      }
      if (closes != 0 || first_not_plain != nullptr) break;  // the latter: in the string that goes on
      if (opens != 0) open = p + __builtin_ctzll(opens) + 1;  // a string that goes on in the next block
      carried_string = (inside >> 63) != 0 ? ~uint64_t{0} : 0;
    }
    names.resize(first);
#else
    (void)names;
#endif
    return false;
  }

  // The bytes of an object starting here, to its matching bracket. Only brackets and strings are
  // followed: whether it is JSON is for simdjson to say. 64 bytes at a time where the padding allows
  // (a Pod of kube-scheduler's is ~2.5 KB: a byte loop was half the cost of decoding a names-mode body).
  bool take_object_bytes(std::string_view& out) {
    skip_space();
    if (at_ == end_ || *at_ != '{') return false;
    const std::optional<const char*> in_blocks = find_object_end_in_blocks(at_);
    const char* end = in_blocks ? *in_blocks : find_object_end_bytewise(at_);
    if (end == nullptr) return false;
    out = std::string_view(at_, static_cast<size_t>(end - at_));
    at_ = end;
    return true;
  }

 private:
  // Just past the bracket that closes the object opening at `start`, or null when the body ends first.
  const char* find_object_end_bytewise(const char* start) const {
    int depth = 0;
    for (const char* p = start; p < end_; ++p) {
      const char c = *p;
      if (c == '"') {
        for (++p; p < end_ && *p != '"'; ++p)
          if (*p == '\\') ++p;
        if (p >= end_) return nullptr;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return p + 1;
      }
    }
    return nullptr;
  }

  // The same, 64 bytes at a time: escaped quotes found as simdjson finds them (runs of backslashes of
  // odd length), the bytes inside strings from the parity of the other quotes, and the depth moved by
  // whole blocks until a block may bring it to zero. Null when the body ends first; nothing when the
  // padding ends before the object does (the caller then reads byte by byte).
  std::optional<const char*> find_object_end_in_blocks(const char* start) const {
#if defined(__SSE2__)
    uint64_t escape_carry = 0, in_string_carry = 0;
    int64_t depth = 0;
    for (const char* p = start; p < end_; p += 64) {
      if (p + 64 > readable_end_) return std::nullopt;
      const StructureBits bits = structure_bits_of_block(p);
      const uint64_t quotes = bits.quote & ~escaped(bits.backslash, escape_carry);
      const uint64_t in_string = prefix_parity(quotes) ^ in_string_carry;
      in_string_carry = (in_string >> 63) != 0 ? ~uint64_t{0} : 0;
      const size_t left = static_cast<size_t>(end_ - p);
      const uint64_t in_body = left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1;
      const uint64_t opens = bits.open & ~in_string & in_body;
      const uint64_t closes = bits.close & ~in_string & in_body;
      if (__builtin_popcountll(closes) < depth) {  // cannot reach zero in this block
        depth += __builtin_popcountll(opens) - __builtin_popcountll(closes);
        continue;
      }
      for (uint64_t brackets = opens | closes; brackets != 0; brackets &= brackets - 1) {
        const int at = __builtin_ctzll(brackets);
        if ((opens >> at) & 1) ++depth;
        else if (--depth == 0) return p + at + 1;
      }
    }
    return nullptr;
#else
    (void)start;
    return std::nullopt;
#endif
  }

#if defined(__SSE2__)
  // One bit per byte of the 64 bytes from p (bit i for p[i]), each 16 bytes loaded once.
  struct StructureBits {
    uint64_t quote = 0, backslash = 0, open = 0, close = 0;  // open: '{' or '['; close: '}' or ']'
  };
  static StructureBits structure_bits_of_block(const char* p) {
    const auto mask = [](__m128i bytes, char c) {
      return _mm_cmpeq_epi8(bytes, _mm_set1_epi8(c));
    };
    const auto bits = [](__m128i matches, size_t part) {
      return uint64_t{static_cast<unsigned>(_mm_movemask_epi8(matches))} << (16 * part);
    };
    StructureBits out;
    for (size_t part = 0; part < 4; ++part) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
      out.quote |= bits(mask(bytes, '"'), part);
      out.backslash |= bits(mask(bytes, '\\'), part);
      out.open |= bits(_mm_or_si128(mask(bytes, '{'), mask(bytes, '[')), part);
      out.close |= bits(_mm_or_si128(mask(bytes, '}'), mask(bytes, ']')), part);
    }
    return out;
  }
  // Of a block's backslashes, the bytes they escape (simdjson's find_escaped): a character is escaped
  // when an odd run of backslashes ends just before it. `carry`: whether the last block's final byte
  // escapes this block's first.
  static uint64_t escaped(uint64_t backslash, uint64_t& carry) {
    constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
    backslash &= ~carry;
    const uint64_t follows_escape = backslash << 1 | carry;
    const uint64_t odd_sequence_starts = backslash & ~kEvenBits & ~follows_escape;
    uint64_t sequences_starting_on_even_bits = 0;
    carry = __builtin_add_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits) ? 1 : 0;
    const uint64_t invert_mask = sequences_starting_on_even_bits << 1;
    return (kEvenBits ^ invert_mask) & follows_escape;
  }
#endif

  // The first byte from p on that is '"', '\\', a control byte or not ASCII; null when none is before
  // the body's end. Reads 16 bytes at a time, up to 15 past the end (into the padding).
  const char* find_special(const char* p) const {
#if defined(__SSE2__)
    for (; p < end_ && p + 16 <= readable_end_; p += 16) {
      const ByteBits bits = bits_of_16(p);
      const uint64_t mask = bits.quote | bits.special;
      if (mask != 0) {
        const char* found = p + __builtin_ctzll(mask);
        return found < end_ ? found : nullptr;
      }
    }
#endif
    for (; p < end_; ++p) {
      const auto byte = static_cast<unsigned char>(*p);
      if (byte == '"' || byte == '\\' || byte < 0x20 || byte > 0x7F) return p;
    }
    return nullptr;
  }

  const char* at_;
  const char* end_;
  const char* readable_end_;
};

bool take_names(Cursor& in, std::vector<std::string_view>& names, std::string_view& json, bool& compact) {
  if (!in.take('[')) return false;
  const char* start = in.position() - 1;
  compact = in.take_compact_strings(names);
  if (compact) {
    json = std::string_view(start, static_cast<size_t>(in.position() - start));
    return true;
  }
  if (!in.take(']')) {
    do {
      std::string_view name;
      if (!in.take_plain_string(name) || names.size() >= kMaxNodesPerRequest) return false;
      names.push_back(name);
    } while (in.take(','));
    if (!in.take(']')) return false;
  }
  json = std::string_view(start, static_cast<size_t>(in.position() - start));
  return true;
}

}  // namespace

bool scan_plain_names_body(std::string_view body, const char* readable_end, PlainNamesBody& out) {
  Cursor in(body, readable_end);
  bool pod = false, nodes = false, names = false;
  if (!in.take('{')) return false;
  do {
    std::string_view key;
    if (!in.take_plain_string(key) || !in.take(':')) return false;
    if (key == "Pod" && !pod) {
      pod = in.take_object_bytes(out.pod);
      if (!pod) return false;
    } else if (key == "Nodes" && !nodes) {
      nodes = in.take_word("null");
      if (!nodes) return false;
    } else if (key == "NodeNames" && !names) {
      names = take_names(in, *out.names, out.names_json, out.names_compact);
      if (!names) return false;
    } else {
      return false;
    }
  } while (in.take(','));
  if (!in.take('}')) return false;
  in.skip_space();
  return in.at_end() && pod && names;
}

}  // namespace gpu_extender::wire
