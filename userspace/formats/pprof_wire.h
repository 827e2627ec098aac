/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pprof wire format as protoc-c compiles proto/profile.proto: shared by
 * the encoder (pprof_encode.c) and the decoder (pprof_decode.c), the only
 * files that know it.
 */
#ifndef EBPROF_PPROF_WIRE_H
#define EBPROF_PPROF_WIRE_H

#include "proto/profile.pb-c.h"

/* Largest decompressed profile we accept. */
#define PPROF_MAX_RAW (1ULL << 30)

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#endif /* EBPROF_PPROF_WIRE_H */
