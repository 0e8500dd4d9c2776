// Every layout declaration: those in layouts/ and in the folders named by TERNLAB_LAYOUT_DIRS,
// collected by the build (cmake/layouts.cmake). Each registers itself; including this header links
// them in.
#pragma once
#include "ternlab_layouts.hpp"
