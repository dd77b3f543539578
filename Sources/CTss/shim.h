#ifndef DPFS_CTSS_SHIM_H
#define DPFS_CTSS_SHIM_H
// tpm2-tss: ESAPI for the commands, the TCTI loader for "device:/dev/tpmrm0" or
// "swtpm:host=...,port=...", MU to store object blobs.
#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>
#include <tss2/tss2_mu.h>
#endif
