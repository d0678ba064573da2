/* Quantities as users write them: memory like Kubernetes ("512Mi", "2Gi",
 * "2G" = 2*10^9, "1.5Gi") plus the IEC spellings people type ("2GiB",
 * "512MB"); compute as a percent of one GPU ("30%" or "30").
 * Garbage, negatives, overflow and empty strings are rejected with a message
 * that quotes the input and shows a valid example. */
#ifndef GS_QUANTITY_H
#define GS_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Parses a byte quantity. Fractions round up to whole bytes. */
int gs_quantity_parse_bytes(const char *s, uint64_t *out, gs_error *err);
/* Parses a size a person wrote (a flag, a setting): like gs_quantity_parse_bytes,
 * but a bare number is refused with the hint, because nvidia-smi and HAMi count
 * in MiB and "2048" read as bytes (2 KiB) is never what was meant. "2048B" is
 * bytes. Files gpuslice writes for itself keep plain byte counts. */
int gs_quantity_parse_size(const char *s, uint64_t *out, gs_error *err);
/* Parses a percentage of one GPU, 1..100, with or without '%'. */
int gs_quantity_parse_percent(const char *s, unsigned *out, gs_error *err);
/* Formats bytes for people: "4 GiB", "1.50 GiB", "512 MiB", "100 B". */
void gs_quantity_format_bytes(uint64_t bytes, char *buf, size_t len);

/* Formats bytes exactly as a Kubernetes quantity: "256Mi", "1Gi", "1536Ki", or the
 * plain number when no binary suffix divides it (labels, the NFD feature file). */
void gs_quantity_format_k8s(uint64_t bytes, char *buf, size_t len);

#endif
