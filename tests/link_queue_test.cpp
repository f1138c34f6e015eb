// The ring under a link (fabric/link_queue.hpp): the producer never reads the consumer's index,
// so a ring written past what it holds is caught by the consumer, through a Reader (a router)
// or through front() (a PE); a Reader's index reaches the queue only when published.
#include <gtest/gtest.h>

#include <stdexcept>

#include "fabric/link_queue.hpp"
#include "fabric/wavelet.hpp"

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

}  // namespace
}  // namespace wse
