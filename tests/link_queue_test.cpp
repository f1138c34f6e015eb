// The ring under a link (fabric/link_queue.hpp): the producer never reads the consumer's index,
// so a ring written past what it holds is caught by the consumer, through a Reader (a router)
// or through front() (a PE); a Reader's index reaches the queue only when published.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fabric/link_queue.hpp"
#include "fabric/mesh.hpp"
#include "fabric/wavelet.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

Flit flit(Cycle arrival) { return Flit{arrival, uint32_t(arrival), 0, 0}; }

TEST(LinkQueue, AReaderTakesEntriesInOrderAndPublishesWhereItStands) {
  LinkQueue<Flit> q;
  q.init(3);  // rounded up to 4
  for (Cycle c = 1; c <= 3; ++c) q.push(flit(c));
  auto r = q.reader();
  ASSERT_TRUE(q.holds(r));
  EXPECT_EQ(r.at().arrival, 1u);
  ++r.head;
  EXPECT_EQ(r.at().arrival, 2u);
  ++r.head;
  // Until published, the queue's own index is where the reader started.
  EXPECT_EQ(q.front()->arrival, 1u);
  q.publish(r);
  EXPECT_EQ(q.front()->arrival, 3u);
  EXPECT_EQ(q.reader().head, r.head);
}

TEST(LinkQueue, AReaderCatchesARingWrittenPastWhatItHolds) {
  LinkQueue<Flit> q;
  q.init(4);
  auto r = q.reader();
  for (Cycle c = 1; c <= 4; ++c) q.push(flit(c));
  EXPECT_NO_THROW(LinkQueue<Flit>::check_room(r, q.tail()));  // full, nothing lost
  q.push(flit(5));  // over the entry the reader has not read
  EXPECT_THROW(LinkQueue<Flit>::check_room(r, q.tail()), std::logic_error);
  ++r.head;  // had the reader taken one first, the ring would have held them
  EXPECT_NO_THROW(LinkQueue<Flit>::check_room(r, q.tail()));
}

TEST(LinkQueue, FrontCatchesARingWrittenPastWhatItHolds) {
  LinkQueue<Credit> q;
  q.init(2);
  q.push(Credit{1, 0});
  q.push(Credit{2, 0});
  EXPECT_EQ(q.front()->visible, 1u);
  q.push(Credit{3, 0});
  EXPECT_THROW(q.front(), std::logic_error);
}

// A queue placed in its caller's storage uses exactly the bytes ring_bytes() names: a power of
// two entries, rounded to whole lines (Flit and Credit are 16 bytes: capacity 3 is 4 entries, one
// line; 5 is 8 entries, two lines), and the line after it is left alone.
TEST(LinkQueue, AQueueInItsCallersStorageKeepsToTheBytesItAskedFor) {
  EXPECT_EQ(LinkQueue<Flit>::ring_bytes(3), 64u);
  EXPECT_EQ(LinkQueue<Flit>::ring_bytes(5), 128u);
  EXPECT_EQ(LinkQueue<Credit>::ring_bytes(1), 64u);  // at least two entries
  struct alignas(64) Line {
    unsigned char b[64];
  };
  std::vector<Line> block(3);
  std::fill_n(&block[0].b[0], 3 * 64, 0xAB);
  LinkQueue<Flit> q;
  q.init(5, block.data());
  EXPECT_EQ(q.reader().ring, reinterpret_cast<const Flit*>(block.data()));
  for (Cycle c = 1; c <= 8; ++c) q.push(flit(c));
  auto r = q.reader();
  for (Cycle c = 1; c <= 8; ++c, ++r.head) EXPECT_EQ(r.at().arrival, c);
  EXPECT_TRUE(std::all_of(&block[2].b[0], &block[2].b[0] + 64, [](unsigned char x) { return x == 0xAB; }));
}

// A mesh puts every link's rings in one block (Mesh::build_links): each ring must be line-aligned
// and no two may share a byte, whatever their sizes. The mesh mixes them: several colours over one
// link (larger credit rings), a switching colour (a larger wavelet ring on the link into it), the
// RAMP both ways and edge egress links, which have no rings.
TEST(LinkQueue, EveryRingOfAMeshHasBytesOfItsOwn) {
  Mesh m(test::spec(1), MeshShape{4, 3});
  for (uint32_t y = 0; y < 3; ++y) {
    for (uint32_t x = 0; x < 4; ++x) {
      m.set_route({x, y}, 0, Route::make(Dir::West, {Dir::East}));
      m.set_route({x, y}, 1, Route::make(Dir::West, {Dir::East, Dir::Ramp}));
      m.set_route({x, y}, 2, x == 0 ? Route::make(Dir::Ramp, {Dir::East}) : Route::make(Dir::West, {Dir::Ramp}));
    }
    m.add_ingress({0, y}, Dir::West);
    m.add_egress({3, y}, Dir::East);
  }
  m.set_switch({2, 1}, 0, ColourSwitchConfig{}.then(SwitchPosition::receive(Dir::Ramp)));
  m.finalize(Partition::make(m.shape(), 1));
  std::vector<std::pair<uintptr_t, uintptr_t>> rings;  // [begin, end) of each
  size_t big = 0;
  for (const Link& l : m.links()) {
    if (l.kind == LinkKind::Egress) continue;
    const auto flits = l.flits.reader();
    const auto credits = l.credits.reader();
    const size_t fb = LinkQueue<Flit>::ring_bytes(flits.mask + 1), cb = LinkQueue<Credit>::ring_bytes(credits.mask + 1);
    big += fb > 64 || cb > 64;
    rings.push_back({uintptr_t(flits.ring), uintptr_t(flits.ring) + fb});
    rings.push_back({uintptr_t(credits.ring), uintptr_t(credits.ring) + cb});
  }
  ASSERT_GT(big, 0u) << "the case should have rings of more than one line";
  std::sort(rings.begin(), rings.end());
  for (size_t i = 0; i < rings.size(); ++i) {
    EXPECT_NE(rings[i].first, 0u);
    EXPECT_EQ(rings[i].first % 64, 0u);
    if (i) { EXPECT_LE(rings[i - 1].second, rings[i].first) << "ring " << i << " overlaps the one before it"; }
  }
}

}  // namespace
}  // namespace wse
