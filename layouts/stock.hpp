// The stock layouts. Each declaration registers itself; including this header links them in.
#pragma once
#include "layouts/pq2_0.hpp"
#include "layouts/ptq1_0.hpp"
#include "layouts/t2p.hpp"
#include "layouts/t2r.hpp"
#include "layouts/t2r8.hpp"
#include "layouts/t2w.hpp"
#include "layouts/t2x4.hpp"
