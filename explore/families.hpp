// The families a layout space can range over (explore/families.cpp): each turns a point of its
// axes into a DSL declaration, or says which of its own limits the point breaks. The DSL's rules
// (layouts/dsl.hpp, find_violation) are checked after, on the declaration itself.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "explore/space.hpp"

namespace ternlab::explore {

struct AxisDomain {
  std::string name;
  bool integer = true;
  std::vector<std::string> words;  // the values a word axis takes
  Value fallback;                  // the value where the space leaves the axis out
  std::string help;
};

using Point = std::map<std::string, Value>;

struct Family {
  std::string name, prefix, summary;
  std::vector<AxisDomain> axes;
  std::vector<std::string> hand_designed;  // registered layouts of the family, for the report
  // Fills c.spec (its strings in c.strings); returns "" or the family's limit the point breaks.
  std::string (*declare)(const Point& point, Candidate& c);
};

const std::vector<Family>& families();
// Throws naming the known families.
const Family& find_family(const std::string& name);

}  // namespace ternlab::explore
