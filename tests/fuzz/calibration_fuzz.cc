// Fuzzes the calibration file reader (sim/model/calibration.h: load_calibration):
// the input is written to a scratch file and loaded; it must load or give
// located diagnostics. What loads is queried as a cost model would query it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/model/calibration.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (fleetsim::fuzz::scratch_dir() / "calibration.yaml").string();
  fleetsim::fuzz::write_file(path, fleetsim::fuzz::input_text(data, size));
  fleetsim::Result<fleetsim::Calibration> c = fleetsim::load_calibration(path);
  if (!c) return 0;
  for (int ranks : {1, 2, 8, 1024}) {
    if (const fleetsim::CollectiveFit* f = c->find(fleetsim::OpKind::kAllReduce, ranks)) (void)f->fit.time_s(1 << 20);
  }
  if (c->nccl) (void)c->nccl->offset_us(fleetsim::OpKind::kAllReduce);
  return 0;
}
