// TensorFlow timeline.py's reading of a node's timeline label, shared by the memory replay
// (tensor names of the inputs) and the Chrome JSON export (args input<i>).
#pragma once

#include <string_view>
#include <vector>

namespace tracecore {

// timeline.py's view of a node label "name = Op(a, b)": re.match(r'(.*) = (.*)\((.*)\)', label)
// with greedy groups and '.' not matching newlines; inputs split on ", ". Returns false when
// the pattern does not match. `inputs` receives views into `label`.
inline bool ParseLabelInputs(std::string_view label, std::vector<std::string_view>* inputs) {
  inputs->clear();
  // re.match anchors at the start; '.' stops at the first newline, so only the first line counts.
  const size_t nl = label.find('\n');
  const std::string_view line = nl == std::string_view::npos ? label : label.substr(0, nl);
  // All groups are greedy: group 3 ends at the line's last ')', group 2 at the last '(' before
  // it, and group 1 at the last " = " that still ends before that '('.
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos || close == 0) return false;
  const size_t open = line.rfind('(', close - 1);
  if (open == std::string_view::npos || open < 3) return false;
  if (line.rfind(" = ", open - 3) == std::string_view::npos) return false;
  const std::string_view args = line.substr(open + 1, close - open - 1);
  if (args.empty()) return true;
  size_t pos = 0;
  for (;;) {
    const size_t sep = args.find(", ", pos);
    if (sep == std::string_view::npos) {
      inputs->push_back(args.substr(pos));
      break;
    }
    inputs->push_back(args.substr(pos, sep - pos));
    pos = sep + 2;
  }
  return true;
}

}  // namespace tracecore
