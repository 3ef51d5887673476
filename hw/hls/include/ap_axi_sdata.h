// hlsfuse work-alike of AMD's ap_axi_sdata.h: AXI4-Stream side-channel structs.
//
//   hls::axis<T, WUser, WId, WDest>   data (of type T), keep, strb, user, last, id, dest
//   ap_axis<W, WUser, WId, WDest>     = hls::axis<ap_int<W>, ...>
//   ap_axiu<W, WUser, WId, WDest>     = hls::axis<ap_uint<W>, ...>
//
// As in AMD's current header, keep and strb are ap_uint<(bits of T + 7) / 8>, last is ap_uint<1>, and
// user/id/dest are ap_uint<width>, or an empty placeholder struct when their width is 0 (the form hlsfuse
// generates: hls::axis<ap_fixed<...>, 0, 0, 0>). As in AMD's, the members are default-constructed: a
// packet's fields are undefined until written (poisoned by the work-alike ap_int.h/ap_fixed.h, left as the
// stack was by AMD's), so a sender sets every field it sends. AMD's EnableSignals/StrictEnablement template
// arguments and the get_/set_ accessors are not provided; generated code uses the members directly.
//
// This header uses only the public ap_int/ap_fixed API, and includes them with <>, so it also works on
// top of AMD's ap_int.h/ap_fixed.h/hls_stream.h (hls4ml's copy of them does not ship ap_axi_sdata.h).
#ifndef HLSFUSE_AP_AXI_SDATA_H
#define HLSFUSE_AP_AXI_SDATA_H

#include <ap_fixed.h>
#include <ap_int.h>
#include <cstddef>
#include <hls_stream.h>

namespace hls {

namespace axis_detail {

// Bit width of a data type: W for the ap_ types, the object size otherwise.
template <typename T>
struct bit_width {
  static const std::size_t value = sizeof(T) * 8;
};
template <int W>
struct bit_width<ap_int<W>> {
  static const std::size_t value = W;
};
template <int W>
struct bit_width<ap_uint<W>> {
  static const std::size_t value = W;
};
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
struct bit_width<ap_fixed<W, I, Q, O, N>> {
  static const std::size_t value = W;
};
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
struct bit_width<ap_ufixed<W, I, Q, O, N>> {
  static const std::size_t value = W;
};

struct disabled_signal {};

// A side channel of width W: ap_uint<W>, or nothing when W is 0.
template <std::size_t W>
struct signal {
  typedef ap_uint<W> type;
};
template <>
struct signal<0> {
  typedef disabled_signal type;
};

}  // namespace axis_detail

template <typename T, std::size_t WUser = 0, std::size_t WId = 0, std::size_t WDest = 0>
struct axis {
  static const std::size_t width_keep = (axis_detail::bit_width<T>::value + 7) / 8;

  T data;
  ap_uint<width_keep> keep;
  ap_uint<width_keep> strb;
  typename axis_detail::signal<WUser>::type user;
  ap_uint<1> last;
  typename axis_detail::signal<WId>::type id;
  typename axis_detail::signal<WDest>::type dest;
};

}  // namespace hls

template <std::size_t W, std::size_t WUser = 0, std::size_t WId = 0, std::size_t WDest = 0>
using ap_axis = hls::axis<ap_int<W>, WUser, WId, WDest>;
template <std::size_t W, std::size_t WUser = 0, std::size_t WId = 0, std::size_t WDest = 0>
using ap_axiu = hls::axis<ap_uint<W>, WUser, WId, WDest>;

#endif  // HLSFUSE_AP_AXI_SDATA_H
