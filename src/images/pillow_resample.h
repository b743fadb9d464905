#pragma once
// Pillow's Image.resize on 8-bit images, bit for bit (libImaging/Resample.c): per axis, filter
// weights computed in double, normalised to sum 1, converted to 22-bit fixed point; two passes
// (horizontal then vertical, or vertical first when the height shrinks by more than twice as
// many pixels as the width, as Pillow 13 orders them), each output rounded and clipped to 0..255.
// transformers' PIL backend resizes through it with reducing_gap=None (no Image.reduce step) and
// the whole image as the box.
#include <string_view>

#include "images/image.h"

namespace xlacel::images {

// PIL.Image.Resampling's values, as preprocessor_config.json's "resample" stores them.
enum class Resample { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

// Throws Error for NEAREST and values Pillow does not define: the processors' configs never use
// them; `where` names the config key.
Resample resample_from_int(int value, std::string_view where);

// An image of width x height (each >= 1); the same size returns a copy, as Pillow does.
Image resize(const Image& image, int width, int height, Resample filter);

}  // namespace xlacel::images
