#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "state/node_name_index.h"

using namespace gpu_extender;

TEST_CASE("node name index: names of every length are found, one by one and all at once, across growth") {
  // Lengths 1..40 around the 8-byte words the hash and the comparison read, and 20,000 names: the
  // table rebuilds itself several times on the way.
  std::vector<std::string> names;
  for (size_t i = 0; i < 20000; ++i) names.push_back(std::string(1 + i % 40, 'n') + std::to_string(i));
  NodeNameIndex index;
  std::vector<std::pair<std::string_view, uint32_t>> so_far;
  for (uint32_t slot = 0; slot < names.size(); ++slot) {
    so_far.emplace_back(names[slot], slot);
    if (!index.insert(names[slot], slot)) index.rebuild(so_far);
  }
  std::vector<std::string_view> queries;
  for (size_t i = names.size(); i-- > 0;) queries.push_back(names[i]);  // another order
  std::string last_byte_differs = names[12345];
  last_byte_differs.back() ^= 1;
  // Absent: a prefix of many names, one byte longer than a name, its last byte changed, empty.
  const std::vector<std::string> absent{"n", names[5] + "x", last_byte_differs, ""};
  for (const std::string& name : absent) queries.push_back(name);
  std::vector<uint64_t> scratch;
  std::vector<uint32_t> found;
  index.find_many(queries, scratch, found);
  REQUIRE(found.size() == queries.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto slot = static_cast<uint32_t>(names.size() - 1 - i);
    REQUIRE(found[i] == slot);
    REQUIRE(index.find(names[slot]) == slot);
  }
  for (size_t i = names.size(); i < queries.size(); ++i) {
    CHECK(found[i] == NodeNameIndex::kNone);
    CHECK(index.find(queries[i]) == NodeNameIndex::kNone);
  }
}

TEST_CASE("node name index: a rebuild forgets names it is not given") {
  NodeNameIndex index;
  std::vector<std::pair<std::string_view, uint32_t>> names{{"gpu-a", 0}, {"gpu-b", 1}, {"gpu-c", 2}};
  index.rebuild(names);
  CHECK(index.find("gpu-b") == 1);
  names.erase(names.begin() + 1);
  index.rebuild(names);
  CHECK(index.find("gpu-b") == NodeNameIndex::kNone);
  CHECK(index.find("gpu-c") == 2);
  CHECK(index.insert("gpu-b", 7));
  CHECK(index.find("gpu-b") == 7);
}

TEST_CASE("node name index: equality is byte for byte at every position") {
  for (size_t length = 0; length <= 24; ++length) {
    const std::string a(length, 'q');
    // Equal bytes in another buffer, at every alignment: never the same pointer.
    for (size_t offset = 0; offset < 8; ++offset) {
      const std::string buffer = std::string(offset, 'x') + a + "zz";
      const std::string_view copy(buffer.data() + offset, length);
      REQUIRE(copy.data() != a.data());
      CHECK(same_node_name(a, copy));
    }
    CHECK_FALSE(same_node_name(a, a + "q"));
    for (size_t at = 0; at < length; ++at) {
      std::string b = a;
      b[at] = 'r';
      CHECK_FALSE(same_node_name(a, b));
    }
  }
}
