// The kernels by name. Listed here rather than registered by static constructors, which a static
// library would let the linker drop.
#include "core/shown.hpp"
#include "kernels/gemv/gemv.hpp"
#include "kernels/kernel.hpp"
#include "kernels/reduce/reduce.hpp"

namespace wse {

const std::vector<KernelKind>& kernel_kinds() {
  static const std::vector<KernelKind> kinds = {gemv_kernel_kind(), reduce_kernel_kind(),
                                                KernelKind{"fc_train", "", true, nullptr, nullptr}};
  return kinds;
}

const KernelKind& kernel_kind(const std::string& name, const std::string& where) {
  std::string known;
  for (const KernelKind& k : kernel_kinds()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw ConfigError(where + ": field 'kernel': unknown kernel '" + shown_brief(name) + "' (known: " + known + ")");
}

}  // namespace wse
