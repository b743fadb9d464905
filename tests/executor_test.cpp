// The executor's choices that need no device: decode batch sizes and attention windows.
#include <gtest/gtest.h>

#include "executor/executor.h"

namespace xlacel::executor {
namespace {

TEST(DecodeBuckets, PowersOfTwoBelowTheSlotsThenTheSlots) {
  EXPECT_EQ(decode_buckets(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(decode_buckets(8), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(decode_buckets(6), (std::vector<int64_t>{1, 2, 4, 6}));
}

// Every position is inside its window; windows double from kMinWindow; from the capacity
// on, 0 (the whole cache).
TEST(DecodeWindow, SmallestPowerOfTwoThatHoldsThePositions) {
  EXPECT_EQ(kMinWindow, 128);
  EXPECT_EQ(attention_window(0, 512), 128);
  EXPECT_EQ(attention_window(127, 512), 128);
  EXPECT_EQ(attention_window(128, 512), 256);
  EXPECT_EQ(attention_window(255, 512), 256);
  EXPECT_EQ(attention_window(256, 512), 0);
  EXPECT_EQ(attention_window(511, 512), 0);
  EXPECT_EQ(attention_window(0, 128), 0);  // the floor is the whole cache
  EXPECT_EQ(attention_window(0, 100), 0);  // a cache smaller than the floor
  EXPECT_EQ(attention_window(200, 300), 256);
  EXPECT_EQ(attention_window(256, 300), 0);
  for (int32_t position = 0; position < 4096; position += 7) {
    const int64_t window = attention_window(position, 4096);
    EXPECT_TRUE(window == 0 || position < window) << position;
  }
}

}  // namespace
}  // namespace xlacel::executor
