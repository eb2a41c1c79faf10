// NVTX's static injection hook (nvtx3/nvtxDetail/nvtxInit.h): every file that includes the NVTX
// headers carries a weak, null InitializeInjectionNvtx2_fnptr; this strong definition replaces it,
// so NVTX hands its callback tables to dit_profile at the first range. It lives in a file of its
// own because a file that includes the NVTX headers already defines the weak symbol.
#include <cstdint>

extern "C" {
using DitProfileGetExportTable = const void* (*)(uint32_t export_table_id);
int dit_profile_initialize_injection(DitProfileGetExportTable get_table);
int (*InitializeInjectionNvtx2_fnptr)(DitProfileGetExportTable) = dit_profile_initialize_injection;
}
