#ifndef DPFS_CSODIUM_SHIM_H
#define DPFS_CSODIUM_SHIM_H
#include <sodium.h>
#endif
