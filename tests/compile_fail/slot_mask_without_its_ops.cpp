// Must NOT compile: the slot-mask kernels instantiated with a policy that lacks the operations the
// strategy reads (SlotMaskOps). Which layouts a strategy reads is asked at run time (its why_not);
// what a target must supply is checked here, at compile time. ctest checks that the compiler's
// message names the concept.
#include "kernels/strategies/slot_mask/kernels.hpp"

struct NoVectorOps {};

int main() { return ternlab::strategies::SlotMask<NoVectorOps, 1, 1, 4>::kPairsPerRow; }
