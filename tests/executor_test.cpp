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

// A slot's copy moves multiples of an eighth of the capacity (at least 128 rows) that hold its
// positions, or all rows; one window per such multiple.
TEST(SlotRowsWindow, MultiplesOfAnEighthOfTheCapacityThatHoldThePositions) {
  EXPECT_EQ(slot_rows_window(2130, 4096), 2560);
  EXPECT_EQ(slot_rows_window(512, 4096), 512);
  EXPECT_EQ(slot_rows_window(513, 4096), 1024);
  EXPECT_EQ(slot_rows_window(3584, 4096), 3584);
  EXPECT_EQ(slot_rows_window(3585, 4096), 0);
  EXPECT_EQ(slot_rows_window(81, 256), 128);
  EXPECT_EQ(slot_rows_window(129, 256), 0);
  EXPECT_EQ(slot_rows_window(10, 128), 0);
  EXPECT_EQ(slot_rows_windows(4096),
            (std::vector<int64_t>{512, 1024, 1536, 2048, 2560, 3072, 3584, 0}));
  EXPECT_EQ(slot_rows_windows(256), (std::vector<int64_t>{128, 0}));
  EXPECT_EQ(slot_rows_windows(100), (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace xlacel::executor
