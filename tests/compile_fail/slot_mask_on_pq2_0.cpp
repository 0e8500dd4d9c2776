// Must NOT compile: requesting the slot-mask kernel plan for pq2_0, whose natural order is not
// slot-vectorizable. ctest checks that the compiler's message names the missing property.
#include "layouts/pq2_0.hpp"

int main() { return ternlab::slot_plan<ternlab::layouts::Pq2_0>[0].byte_offset; }
