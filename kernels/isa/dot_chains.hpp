// The asm skeleton of the int8 compute-ceiling loops (kernels/targets/avx2/kernels.cpp, kernels/targets/avx512vnni/kernels.cpp):
// kDotChains = 12 accumulators, each the destination of its own instruction in one asm statement.
// Written as asm because the compiler, given intrinsics, merged chains that shared operands and kept
// an accumulator array on the stack; either way the loop measured something other than the port.
//
//   asm(TERNLAB_CHAINS12(LINE) : TERNLAB_ACCUMULATORS12("+x", a) : ...)
// with LINE(k) the text of chain k's instruction and accumulators a0 .. a11.
#pragma once

#define TERNLAB_CHAINS12(LINE) \
  LINE(0) LINE(1) LINE(2) LINE(3) LINE(4) LINE(5) LINE(6) LINE(7) LINE(8) LINE(9) LINE(10) LINE(11)
#define TERNLAB_ACCUMULATORS12(C, a)                                                                      \
  C(a##0), C(a##1), C(a##2), C(a##3), C(a##4), C(a##5), C(a##6), C(a##7), C(a##8), C(a##9), C(a##10), \
      C(a##11)
