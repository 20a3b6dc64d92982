// Vantage sanitizer defaults, linked into every executable of a sanitizer build (never into the
// library). GCC 12's sanitizer runtime (like LLVM's before 17) mistakes a dynamic-TLS block that
// starts 16 bytes past a 4096-byte boundary for a glibc 2.19 block, reads a bogus range from the 16
// bytes before it, and LeakSanitizer's tracer then dies scanning that range at exit ("Tracer caught
// signal 11"; google/sanitizers#1322). libnvrtc is dlopen'ed and has thread-locals, so its block
// lands there in some processes, depending only on how many allocations came before. Not
// intercepting __tls_get_addr only removes dynamic-TLS blocks from the leak checker's roots: it can
// report more, never hide a leak. tests/sanitizer_probe.cpp puts the block at that address on purpose.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
extern "C" const char* __tsan_default_options() { return "intercept_tls_get_addr=0"; }

// libnvrtc is not built with ThreadSanitizer: it publishes a lazily made pthread mutex to other
// threads through code TSan cannot see, so two first compiles on two threads (Concurrency.*) are
// reported, now and then, as a race inside libnvrtc on that mutex. NVRTC documents concurrent
// compiles of distinct programs as safe. Ignoring the interceptors libnvrtc calls (its malloc and
// mutex calls) is TSan's remedy for an uninstrumented library; a race on memory of ours is still
// reported, since our own accesses stay instrumented.
extern "C" const char* __tsan_default_suppressions() { return "called_from_lib:libnvrtc.so\n"; }
