/* base64.c — base64 decoding and encoding (see base64.h). */
#include "shared/base64.h"

static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

long km_base64_decode(const char *text, size_t len, uint8_t *out, size_t cap)
{
	uint32_t acc = 0;
	size_t bits = 0, n = 0;

	while (len > 0 && text[len - 1] == '=')
		len--;
	if (len % 4 == 1)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int v = sextet(text[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == cap)
				return -1;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return (long)n;
}

size_t km_base64_encode(const uint8_t *data, size_t len, char *out)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)data[i + 1] << 8;
		if (left > 2)
			v |= data[i + 2];
		out[n++] = alphabet[(v >> 18) & 63];
		out[n++] = alphabet[(v >> 12) & 63];
		out[n++] = left > 1 ? alphabet[(v >> 6) & 63] : '=';
		out[n++] = left > 2 ? alphabet[v & 63] : '=';
	}
	out[n] = '\0';
	return n;
}
