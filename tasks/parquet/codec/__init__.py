"""Page compression: page CRC32 checks and decompression on the host's codecs or nvCOMP
(decompress), and nvCOMP's C API (nvcomp_c)."""
