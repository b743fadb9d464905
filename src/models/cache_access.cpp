#include "models/cache_access.h"

#include <algorithm>

#include "models/llama_layers.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

Value i32_constant(Block& b, const std::vector<int64_t>& shape, int64_t value) {
  return constant(b, TensorType(ElementType::kI32, shape), static_cast<double>(value));
}

// The position ring row `row` holds before position `next` is written: the latest q < next with
// q = row (mod rows), negative where none was written. `next` and `row` are i32 of one shape
// (next >= 0, 0 <= row < rows).
Value held_position(Value next, Value row, int64_t rows) {
  Block& b = next.block();
  auto c = [&](int64_t value) { return i32_constant(b, next.shape(), value); };
  // q = next - rows + ((row - next mod rows) mod rows), every operand of remainder non-negative.
  Value offset = remainder(row - remainder(next, c(rows)) + c(rows), c(rows));
  return next - c(rows) + offset;
}

// rows_kvd [T, Hkv, D] as one slot's block [1, Hkv, T, D] in the cache's element type.
Value slot_block(Value rows_kvd, ElementType element) {
  if (rows_kvd.element() != element) rows_kvd = convert(rows_kvd, element);
  const std::vector<int64_t>& s = rows_kvd.shape();
  return reshape(transpose(rows_kvd, {1, 0, 2}), {1, s[1], s[0], s[2]});
}

}  // namespace

CacheAccess CacheAccess::prefill(std::vector<PrefillChunkRows> chunks, int64_t bucket,
                                 int64_t window) {
  CacheAccess access;
  access.kind_ = GraphKind::kPrefill;
  access.window_ = window;
  access.chunks_ = std::move(chunks);
  access.tokens_ = bucket;
  return access;
}

CacheAccess CacheAccess::decode(Value positions, int64_t window) {
  CacheAccess access;
  access.kind_ = GraphKind::kDecode;
  access.positions_ = positions;
  access.tokens_ = positions.shape()[0];
  access.window_ = window;
  return access;
}

CacheUpdate CacheAccess::update(Value k_cache, Value v_cache, Value k, Value v,
                                int64_t capacity) const {
  const std::vector<int64_t> shape = k_cache.shape();  // [slots, Hkv, rows, D]
  const int64_t rows = shape[2];
  const bool ring = rows < capacity;
  Block& b = k.block();
  CacheUpdate result;
  if (kind_ == GraphKind::kPrefill) {
    Value zero = i32_constant(b, {}, 0);
    const int64_t read_rows = window_ > 0 ? std::min(window_, rows) : rows;
    const std::vector<int64_t> slot_shape = {1, shape[1], read_rows, shape[3]};
    const bool several = chunks_.size() > 1;
    // Sequence s's rows of this call's k or v.
    auto rows_of = [&](Value x, int64_t s) {
      if (!several) return x;
      std::vector<int64_t> begin(x.shape().size(), 0), end = x.shape();
      begin[0] = s * tokens_;
      end[0] = (s + 1) * tokens_;
      return slice(x, begin, end);
    };
    std::vector<Value> keys, values, positions;
    result.k_cache = k_cache;
    result.v_cache = v_cache;
    for (std::size_t s = 0; s < chunks_.size(); ++s) {
      const PrefillChunkRows& chunk = chunks_[s];
      Value k_s = rows_of(k, static_cast<int64_t>(s));
      Value v_s = rows_of(v, static_cast<int64_t>(s));
      if (!ring) {
        result.k_cache = prefill_store(result.k_cache, chunk, slot_block(k_s, k_cache.element()));
        result.v_cache = prefill_store(result.v_cache, chunk, slot_block(v_s, v_cache.element()));
        continue;
      }
      // Attention reads [the ring before the chunk ; the chunk] (the chunk may hold more
      // positions than the ring, and its own rows are what its queries attend), and the ring's
      // new rows are taken from those same rows, so the write depends on the read: with only the
      // cache as its source, IREE may update the donated cache in place before reading its old
      // rows.
      Value k_rows = attended_rows(result.k_cache, chunk, k_s);
      Value v_rows = attended_rows(result.v_cache, chunk, v_s);
      result.k_cache = prefill_ring_store(result.k_cache, chunk, k_rows);
      result.v_cache = prefill_ring_store(result.v_cache, chunk, v_rows);
      keys.push_back(slot_block(k_rows, k_cache.element()));
      values.push_back(slot_block(v_rows, v_cache.element()));
      Value held = held_position(broadcast_in_dim(chunk.start, {rows}, {}),
                                 iota(b, TensorType(ElementType::kI32, {rows}), 0), rows);
      Value own = broadcast_in_dim(chunk.start, {tokens_}, {}) +
                  iota(b, TensorType(ElementType::kI32, {tokens_}), 0);
      positions.push_back(reshape(concatenate({held, own}, 0), {1, rows + tokens_}));
    }
    if (!ring) {
      // Every chunk is written before any slot is read: a sequence's slot holds only its own.
      for (const PrefillChunkRows& chunk : chunks_) {
        keys.push_back(dynamic_slice(result.k_cache, {chunk.slot, zero, zero, zero}, slot_shape));
        values.push_back(dynamic_slice(result.v_cache, {chunk.slot, zero, zero, zero}, slot_shape));
      }
    }
    auto joined = [](const std::vector<Value>& parts) {
      return parts.size() == 1 ? parts[0] : concatenate(parts, 0);
    };
    result.read.keys = joined(keys);
    result.read.values = joined(values);
    if (ring) result.read.positions = joined(positions);
    return result;
  }
  result.k_cache = decode_store(k_cache, k, ring ? rows : 0);
  result.v_cache = decode_store(v_cache, v, ring ? rows : 0);
  // With a window, every position is below it, so a ring's rows beyond it hold nothing yet.
  const int64_t read_rows = window_ > 0 ? std::min(window_, rows) : rows;
  const std::vector<int64_t> read_shape = {tokens_, shape[1], read_rows, shape[3]};
  result.read.keys = slice(result.k_cache, {0, 0, 0, 0}, read_shape);
  result.read.values = slice(result.v_cache, {0, 0, 0, 0}, read_shape);
  if (!ring) {
    result.read.whole_keys = result.k_cache;
    result.read.whole_values = result.v_cache;
  }
  if (ring) {
    const std::vector<int64_t> key_shape = {tokens_, read_rows};
    Value next = broadcast_in_dim(positions_ + i32_constant(b, {tokens_}, 1), key_shape, {0});
    result.read.positions =
        held_position(next, iota(b, TensorType(ElementType::kI32, key_shape), 1), rows);
  }
  return result;
}

RecentInputs CacheAccess::recent_inputs(Value cache, Value x) const {
  Block& b = x.block();
  const std::vector<int64_t> shape = cache.shape();  // [slots, 1, taps, D]
  const int64_t taps = shape[2], width = shape[3];
  // Rows `index` (i32, any shape) of `table` [M, D], zero where `position` (same shape) < 0.
  auto rows_at = [&](Value table, Value index, Value position) {
    Value rows = to_f32(take(table, index));
    std::vector<int64_t> dims(index.shape().size());
    for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
    Value before_start =
        broadcast_in_dim(compare(position, i32_constant(b, position.shape(), 0), Direction::kLT),
                         rows.shape(), dims);
    return select(before_start, constant(b, rows.type(), 0.0), rows);
  };
  // The ring row holding `position` (> -taps).
  auto ring_row = [&](Value position) {
    const std::vector<int64_t>& s = position.shape();
    return remainder(position + i32_constant(b, s, taps), i32_constant(b, s, taps));
  };
  RecentInputs result;
  if (kind_ == GraphKind::kPrefill) {
    std::vector<Value> windows;
    result.cache = cache;
    const TensorType taps_i32(ElementType::kI32, {taps - 1});
    const TensorType window_i32(ElementType::kI32, {tokens_, taps});
    for (std::size_t s = 0; s < chunks_.size(); ++s) {
      const PrefillChunkRows& chunk = chunks_[s];
      const auto first = static_cast<int64_t>(s) * tokens_;
      Value rows = slice(x, {first, 0}, {first + tokens_, width});
      // [the slot's ring ; the chunk's rows]: the ring's new rows and the window are both read
      // from it (see update(): the write must depend on the read).
      Value attended = attended_rows(result.cache, chunk, reshape(rows, {tokens_, 1, width}));
      Value table = reshape(attended, {taps + tokens_, width});
      // The taps - 1 positions before the chunk, then the chunk's own.
      Value before = broadcast_in_dim(chunk.start, {taps - 1}, {}) + iota(b, taps_i32, 0) -
                     i32_constant(b, {taps - 1}, taps - 1);
      Value sequence = concatenate({rows_at(table, ring_row(before), before),
                                    to_f32(slice(table, {taps, 0}, {taps + tokens_, width}))},
                                   0);
      // Row i's window is sequence rows i .. i + taps - 1.
      Value index = iota(b, window_i32, 0) + iota(b, window_i32, 1);
      windows.push_back(take(sequence, index));
      result.cache = prefill_ring_store(result.cache, chunk, attended);
    }
    result.window = windows.size() == 1 ? windows[0] : concatenate(windows, 0);
    return result;
  }
  result.cache = decode_store(cache, reshape(x, {tokens_, 1, width}), taps);
  // Slot n's ring after the write, as rows n * taps .. n * taps + taps - 1 of one table.
  Value table = reshape(slice(result.cache, {0, 0, 0, 0}, {tokens_, 1, taps, width}),
                        {tokens_ * taps, width});
  const TensorType window_i32(ElementType::kI32, {tokens_, taps});
  Value position = broadcast_in_dim(positions_, {tokens_, taps}, {0}) + iota(b, window_i32, 1) -
                   i32_constant(b, {tokens_, taps}, taps - 1);
  Value slot_first = iota(b, window_i32, 0) * i32_constant(b, {tokens_, taps}, taps);
  result.window = rows_at(table, slot_first + ring_row(position), position);
  return result;
}

Value CacheAccess::state_before(Value cache) const {
  Block& b = cache.block();
  const std::vector<int64_t>& shape = cache.shape();  // [slots, 1, 2, S]
  const int64_t width = shape[3];
  // The row holding position p - 1 (p >= 0): (p + 1) mod 2.
  auto previous_row = [&](Value p) {
    const std::vector<int64_t>& s = p.shape();
    return remainder(p + i32_constant(b, s, 1), i32_constant(b, s, 2));
  };
  if (kind_ == GraphKind::kPrefill) {
    Value zero = i32_constant(b, {}, 0);
    std::vector<Value> states;
    for (const PrefillChunkRows& chunk : chunks_) {
      Value row = previous_row(chunk.start);
      Value state =
          reshape(to_f32(dynamic_slice(cache, {chunk.slot, zero, row, zero}, {1, 1, 1, width})),
                  {1, width});
      Value fresh = broadcast_in_dim(compare(chunk.start, zero, Direction::kLE), {1, width}, {});
      states.push_back(select(fresh, constant(b, state.type(), 0.0), state));
    }
    return states.size() == 1 ? states[0] : concatenate(states, 0);
  }
  // Slot n's two rows as rows 2n, 2n + 1 of one table.
  Value table = reshape(slice(cache, {0, 0, 0, 0}, {tokens_, 1, 2, width}), {tokens_ * 2, width});
  const TensorType rows_i32(ElementType::kI32, {tokens_});
  Value index = iota(b, rows_i32, 0) * i32_constant(b, {tokens_}, 2) + previous_row(positions_);
  Value state = to_f32(take(table, index));
  Value fresh = broadcast_in_dim(compare(positions_, i32_constant(b, {tokens_}, 0), Direction::kLE),
                                 {tokens_, width}, {0});
  return select(fresh, constant(b, state.type(), 0.0), state);
}

Value CacheAccess::store_state(Value cache, Value after) const {
  Block& b = cache.block();
  const int64_t width = cache.shape()[3];
  if (after.element() != cache.element()) after = convert(after, cache.element());
  if (kind_ != GraphKind::kPrefill) {
    return decode_store(cache, reshape(after, {tokens_, 1, width}), 2);
  }
  Value zero = i32_constant(b, {}, 0);
  for (std::size_t s = 0; s < chunks_.size(); ++s) {
    const PrefillChunkRows& chunk = chunks_[s];
    const auto n = static_cast<int64_t>(s);
    // The row of the last real position, start + valid_length - 1 (kept non-negative).
    Value row = remainder(chunk.start + chunk.valid_length + i32_constant(b, {}, 1),
                          i32_constant(b, {}, 2));
    Value state = reshape(slice(after, {n, 0}, {n + 1, width}), {1, 1, 1, width});
    Value held = dynamic_slice(cache, {chunk.slot, zero, row, zero}, {1, 1, 1, width});
    Value real =
        broadcast_in_dim(compare(chunk.valid_length, zero, Direction::kGT), {1, 1, 1, width}, {});
    cache = dynamic_update_slice(cache, select(real, state, held), {chunk.slot, zero, row, zero});
  }
  return cache;
}

Value CacheAccess::prefill_store(Value cache, const PrefillChunkRows& chunk, Value block) const {
  // The block's T rows go at `start`, except that they must lie inside the cache: near the end
  // they go at capacity - T, with the rows before `start` kept as they are and the rows past the
  // capacity (padding: start + valid_length <= capacity) left out.
  Block& b = cache.block();
  const int64_t capacity = cache.shape()[2];
  const std::vector<int64_t>& shape = block.shape();  // [1, Hkv, T, D]
  Value zero = i32_constant(b, {}, 0);
  Value write_start = minimum(chunk.start, i32_constant(b, {}, capacity - tokens_));
  Value kept = chunk.start - write_start;
  Value old = dynamic_slice(cache, {chunk.slot, zero, write_start, zero}, shape);
  // Row i: block row i - kept.
  Value moved = dynamic_slice(concatenate({block, block}, 2),
                              {zero, zero, i32_constant(b, {}, tokens_) - kept, zero}, shape);
  Value row = iota(b, TensorType(ElementType::kI32, shape), 2);
  Value keep_old = compare(row, broadcast_in_dim(kept, shape, {}), Direction::kLT);
  if (chunks_.size() > 1) {
    // Over several sequences, the padding rows keep what the slot held too: a padding sequence
    // (valid_length 0, graph_options.h) then writes nothing, whatever its rows computed.
    Value end = broadcast_in_dim(kept + chunk.valid_length, shape, {});
    keep_old = logical_or(keep_old, compare(row, end, Direction::kGE));
  }
  return dynamic_update_slice(cache, select(keep_old, old, moved),
                              {chunk.slot, zero, write_start, zero});
}

Value CacheAccess::attended_rows(Value cache, const PrefillChunkRows& chunk, Value rows_kvd) const {
  Block& b = cache.block();
  const std::vector<int64_t>& shape = cache.shape();  // [slots, Hkv, R, D]
  Value zero = i32_constant(b, {}, 0);
  Value ring =
      dynamic_slice(cache, {chunk.slot, zero, zero, zero}, {1, shape[1], shape[2], shape[3]});
  ring = transpose(reshape(ring, {shape[1], shape[2], shape[3]}), {1, 0, 2});
  if (rows_kvd.element() != cache.element()) rows_kvd = convert(rows_kvd, cache.element());
  return concatenate({ring, rows_kvd}, 0);
}

Value CacheAccess::prefill_ring_store(Value cache, const PrefillChunkRows& chunk,
                                      Value attended) const {
  // After the chunk, row r holds the latest position below start + valid_length with its
  // residue: the chunk's row for it where that position is in the chunk (attended row R + i),
  // else what it held (attended row r).
  Block& b = cache.block();
  const int64_t rows = cache.shape()[2];
  const TensorType row_type(ElementType::kI32, {rows});
  Value row = iota(b, row_type, 0);
  Value end = broadcast_in_dim(chunk.start + chunk.valid_length, {rows}, {});
  Value chunk_row = held_position(end, row, rows) - broadcast_in_dim(chunk.start, {rows}, {});
  Value from_chunk = compare(chunk_row, i32_constant(b, {rows}, 0), Direction::kGE);
  Value source = select(from_chunk, chunk_row + i32_constant(b, {rows}, rows), row);
  Value updated = slot_block(take(attended, source), cache.element());  // [1, Hkv, R, D]
  Value zero = i32_constant(b, {}, 0);
  return dynamic_update_slice(cache, updated, {chunk.slot, zero, zero, zero});
}

Value CacheAccess::decode_store(Value cache, Value rows_kvd, int64_t ring_rows) const {
  if (rows_kvd.element() != cache.element()) rows_kvd = convert(rows_kvd, cache.element());
  Block& b = cache.block();
  const int64_t kv_heads = cache.shape()[1];
  Value row = positions_;
  if (ring_rows > 0) row = remainder(row, i32_constant(b, {tokens_}, ring_rows));
  // Row b, head h: its [D] window replaces cache[b, h, row[b], :] (each row its own position).
  // One index per (row, head) rather than one per row with an [Hkv, D] window: IREE 3.13 cannot
  // lower a scatter whose inserted window dims are not the leading ones ("expected indices to be
  // equal to batch rank or batch rank + 1").
  const TensorType index_type(ElementType::kI32, {tokens_, kv_heads, 1});
  Value index = concatenate({iota(b, index_type, 0), iota(b, index_type, 1),
                             broadcast_in_dim(row, index_type.shape(), {0})},
                            2);
  ScatterDimensions d{.update_window_dims = {2},
                      .inserted_window_dims = {0, 1, 2},
                      .scatter_dims_to_operand_dims = {0, 1, 2},
                      .index_vector_dim = 2};
  return scatter_replace(cache, index, rows_kvd, d,
                         {.indices_are_sorted = true, .unique_indices = true});
}

}  // namespace xlacel::models
