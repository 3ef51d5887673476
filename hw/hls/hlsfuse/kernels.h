// hlsfuse's hand-written HLS kernel library, written once and reused by every generated design.
//
// Generated stage functions (templates/hls) include this header and call its building blocks; every block
// documents its contract at the top of its own header:
//
//   numeric.h     formats of ap types, raw bits, exact product/sum types, exact accumulation,
//                 assign_quotient (means, average pools), lookup-table index
//   shape.h       compile-time shapes (hlsf::dims) and row-major index counters
//   linebuffer.h  window geometry and the line buffer + window of conv2d / max_pool2d / avg_pool2d stages
//   mac.h         conv2d and dense multiply-accumulate, window sum and maximum
//   own.h         slice, pad, concat, transpose stages
//   convert.h     the width converter (tokens of A lanes re-packed into tokens of B)
//   opaque.h      softmax, argmax, topk stages
//   norm.h        layer_norm and rms_norm stages (and their reciprocal square root)
//
// Conventions shared by all of them (DESIGN.md sections 2 and 3, docs/numerics.md):
//   - one call of a stage function processes one frame: one tensor, row-major, one element per transfer;
//   - exact intermediates, one rounding: a result is assigned once to the node's output type, `T_OUT(x)`,
//     so T_OUT must be ap_fixed/ap_ufixed (hlsfuse spells intN as ap_fixed<N, N>) or float;
//   - synthesizable C++14: fixed-size arrays, compile-time dimensions as template parameters, loops that
//     move one element per cycle are `#pragma HLS PIPELINE II=1`, no dynamic memory, no recursion.
//
// Compile with the folder holding this `hlsfuse/` directory on the include path, next to the ap_types
// (hlsfuse's work-alike hw/hls/include, or AMD's). g++ warns about every `#pragma HLS` under -Wall (GCC
// cannot silence unknown pragmas from a header, bug 53431), so C simulation builds add -Wno-unknown-pragmas.
#ifndef HLSFUSE_KERNELS_H
#define HLSFUSE_KERNELS_H

#include "convert.h"
#include "linebuffer.h"
#include "mac.h"
#include "norm.h"
#include "numeric.h"
#include "opaque.h"
#include "own.h"
#include "shape.h"

#endif  // HLSFUSE_KERNELS_H
