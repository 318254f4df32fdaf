// Deterministic PNG: IHDR (8-bit RGB) + one IDAT per band of rows + IEND, nothing else.
// The image is split into fixed bands; each band is filtered and deflated independently (raw
// deflate, ending in a sync flush so it stops on a byte boundary), so bands compress in parallel
// and concatenate into one valid zlib stream. The split depends on options only, never on the
// number of threads, so the bytes are the same however the work was scheduled.
#include "png_encoder.h"

#include <libdeflate.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef EVIDENT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "evident/core/sha256.h"
#include "thread_pool.h"

namespace evident {
namespace detail {
namespace {

constexpr int kMaxDimension = 1 << 15;

void put_u32(std::string& out, std::uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  out.append(b, 4);
}

void put_chunk(std::string& out, const char type[4], const std::string& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  std::size_t type_at = out.size();
  out.append(type, 4);
  out.append(data);
  uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(out.data() + type_at), 4 + data.size());
  put_u32(out, static_cast<std::uint32_t>(crc));
}

// libdeflate's CRC-32 (carry-less multiply) is about 4x zlib's on the band outputs; same CRC.
std::uint32_t idat_crc(const std::string& data) {
  std::uint32_t crc = libdeflate_crc32(0, "IDAT", 4);
  return libdeflate_crc32(crc, data.data(), data.size());
}

// One raw-deflate stream per thread, reset per band: allocation happens once per thread.
struct Deflater {
  z_stream strm{};
  int level = -1;
  std::vector<std::uint8_t> filtered;
  std::vector<std::uint8_t> row_a, row_b;
#ifdef EVIDENT_HAVE_ISAL
  std::unique_ptr<isal_zstream> isal;  // large (holds its history buffer): on the heap
  std::vector<std::uint8_t> isal_level_buf;
  std::vector<std::uint8_t> isal_out;  // deflate output before it is copied to the band
#endif

  ~Deflater() {
    if (level >= 0) deflateEnd(&strm);
  }
  bool prepare(int want_level) {
    if (level == want_level) return deflateReset(&strm) == Z_OK;
    if (level >= 0) deflateEnd(&strm);
    level = -1;
    std::memset(&strm, 0, sizeof strm);
    if (deflateInit2(&strm, want_level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return false;
    }
    level = want_level;
    return true;
  }
};

// Raw deflate of `in` appended to `out` (after `prefix` bytes already there). Non-last bands end
// with a sync flush (an empty stored block: byte aligned, not final) so the next band's blocks
// can follow directly; the last band ends the stream.
bool deflate_zlib(Deflater& d, int level, bool last, std::string& out, std::size_t prefix) {
  if (!d.prepare(level)) return false;
  std::size_t bound = deflateBound(&d.strm, d.filtered.size()) + 64;
  out.resize(prefix + bound);
  d.strm.next_in = d.filtered.data();
  d.strm.avail_in = static_cast<uInt>(d.filtered.size());
  d.strm.next_out = reinterpret_cast<Bytef*>(out.data() + prefix);
  d.strm.avail_out = static_cast<uInt>(bound);
  int rc = deflate(&d.strm, last ? Z_FINISH : Z_SYNC_FLUSH);
  if (last ? rc != Z_STREAM_END : (rc != Z_OK || d.strm.avail_out == 0)) return false;
  if (d.strm.avail_in != 0) return false;
  out.resize(prefix + (bound - d.strm.avail_out));
  return true;
}

#ifdef EVIDENT_HAVE_ISAL
// Feeds `n` bytes to the stream and collects its output in `buf` after the `done` bytes already
// there, growing `buf` as needed (a per-thread buffer: growing a std::string per band zero-filled
// ~7 MB per frame). `end` ends the deflate stream, otherwise the call ends with a sync flush
// (byte aligned, not final).
bool isal_feed(isal_zstream& s, const std::uint8_t* data, std::size_t n, bool end,
               std::vector<std::uint8_t>& buf, std::size_t& done) {
  s.end_of_stream = end ? 1 : 0;
  s.flush = end ? NO_FLUSH : SYNC_FLUSH;
  s.next_in = const_cast<std::uint8_t*>(data);
  s.avail_in = static_cast<std::uint32_t>(n);
  if (buf.size() < done + n + n / 8 + 4096) buf.resize(done + n + n / 8 + 4096);
  for (;;) {
    s.next_out = buf.data() + done;
    s.avail_out = static_cast<std::uint32_t>(buf.size() - done);
    if (isal_deflate(&s) != COMP_OK) return false;
    done = buf.size() - s.avail_out;
    // Output space left over means everything, flush or final block included, was written.
    if (s.avail_out > 0) break;
    buf.resize(buf.size() * 2);
  }
  if (s.avail_in != 0) return false;
  return !end || s.internal_state.state == ZSTATE_END;
}

// Why the first bytes of a band get their own call: ISA-L 2.30's x86 level 1 and 2 match finders
// (igzip_icf_body_h1_gr_bt.asm, every SIMD variant) hash a register that still holds the
// isal_zstream pointer when a fresh stream's first byte goes through them, so position 2 lands
// in a hash bucket chosen by bits 16..47 of the stream's address. The output stayed valid but
// depended on where each thread's stream was allocated (docs/capture.md has the evidence). The
// "finish" routine handles the first byte correctly and is the only one that runs when a call
// carries at most kIsalFinishOnly bytes with a flush; once it has seen the first byte the stream
// has history and the match finder skips its faulty path. Cost: one extra tiny block and a sync
// flush marker (about 11 bytes) per band.
constexpr std::size_t kIsalPrimeBytes = 8;
constexpr std::size_t kIsalFinishOnly = 16;  // at most this much input never reaches the body

constexpr std::size_t kIsalLevelBuf[4] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
                                          ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};

enum class IsalOutcome { kOk, kFailed, kUseZlib };

// Raw deflate of data[0..n) appended to `out` after `prefix` bytes, with a stream that has been
// constructed by the caller (its address is what the ISA-L defect depended on); `buf` is scratch.
IsalOutcome deflate_isal_into(isal_zstream& s, std::vector<std::uint8_t>& level_buf,
                              std::vector<std::uint8_t>& buf, const std::uint8_t* data,
                              std::size_t n, int level, bool last, std::string& out,
                              std::size_t prefix) {
  if (level_buf.size() < kIsalLevelBuf[level]) level_buf.resize(kIsalLevelBuf[level]);
  isal_deflate_init(&s);
  s.level = static_cast<std::uint32_t>(level);
  s.level_buf = level_buf.empty() ? nullptr : level_buf.data();
  s.level_buf_size = static_cast<std::uint32_t>(kIsalLevelBuf[level]);
  std::size_t head = 0;
  std::size_t done = 0;
  if (level > 0 && n > kIsalFinishOnly) {
    head = kIsalPrimeBytes;
    if (!isal_feed(s, data, head, false, buf, done)) return IsalOutcome::kFailed;
    // Another ISA-L build may route the first bytes differently; never let the faulty path run.
    if (s.internal_state.has_hist != IGZIP_HIST) return IsalOutcome::kUseZlib;
  }
  if (!isal_feed(s, data + head, n - head, last, buf, done)) return IsalOutcome::kFailed;
  out.resize(prefix);
  out.append(reinterpret_cast<const char*>(buf.data()), done);
  return IsalOutcome::kOk;
}

bool deflate_isal(Deflater& d, int level, bool last, std::string& out, std::size_t prefix) {
  if (!d.isal) d.isal = std::make_unique<isal_zstream>();
  switch (deflate_isal_into(*d.isal, d.isal_level_buf, d.isal_out, d.filtered.data(),
                            d.filtered.size(), level, last, out, prefix)) {
    case IsalOutcome::kOk:
      return true;
    case IsalOutcome::kUseZlib:
      return deflate_zlib(d, level, last, out, prefix);
    case IsalOutcome::kFailed:
      break;
  }
  return false;
}
#endif

Deflater& thread_deflater() {
  thread_local Deflater d;
  return d;
}

using Band = EncodedBand;

// out[i] = a[i] - b[i] for i in [0, n): 16 bytes per step where SSE2 exists (every x86-64), which
// made the filter 4x cheaper than the byte loop the compiler kept at -O2 (it cannot rule out
// aliasing). Wrapping byte arithmetic, so the result is the same either way.
void subtract_bytes(const std::uint8_t* a, const std::uint8_t* b, int n, std::uint8_t* out) {
  int i = 0;
#ifdef __SSE2__
  for (; i + 16 <= n; i += 16) {
    __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_sub_epi8(va, vb));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<std::uint8_t>(a[i] - b[i]);
}

void filter_row(PngFilter filter, const std::uint8_t* cur, const std::uint8_t* prev, int bytes,
                std::uint8_t* out) {
  switch (filter) {
    case PngFilter::kNone:
      out[0] = 0;
      std::memcpy(out + 1, cur, bytes);
      return;
    case PngFilter::kSub: {
      out[0] = 1;
      const int head = std::min(3, bytes);
      std::memcpy(out + 1, cur, head);
      if (bytes > 3) subtract_bytes(cur + 3, cur, bytes - 3, out + 4);
      return;
    }
    case PngFilter::kUp:
      out[0] = 2;
      if (prev == nullptr) {
        std::memcpy(out + 1, cur, bytes);
      } else {
        subtract_bytes(cur, prev, bytes, out + 1);
      }
      return;
  }
}

std::uint16_t zlib_header(int level) {
  if (level <= 1) return 0x7801;
  if (level <= 5) return 0x785e;
  if (level == 6) return 0x789c;
  return 0x78da;
}

void encode_band(int index, int bands, int width, int height, const RowSource& rows,
                 const PngOptions& options, Band& band) {
  Deflater& d = thread_deflater();
  const int row_bytes = width * 3;
  const int y0 = index * options.band_rows;
  const int y1 = std::min(height, y0 + options.band_rows);
  const std::size_t stride = static_cast<std::size_t>(row_bytes) + 1;
  d.filtered.resize(stride * static_cast<std::size_t>(y1 - y0));
  d.row_a.resize(row_bytes);
  d.row_b.resize(row_bytes);
  std::uint8_t* scratch_cur = d.row_a.data();
  std::uint8_t* scratch_prev = d.row_b.data();
  const std::uint8_t* prev = nullptr;
  if (options.filter == PngFilter::kUp && y0 > 0) prev = rows(y0 - 1, scratch_prev);
  for (int y = y0; y < y1; ++y) {
    const std::uint8_t* cur = rows(y, scratch_cur);
    filter_row(options.filter, cur, prev, row_bytes,
               d.filtered.data() + stride * static_cast<std::size_t>(y - y0));
    prev = cur;
    // The row just produced must survive as `prev`; the next row goes to the other scratch.
    if (cur == scratch_cur) std::swap(scratch_cur, scratch_prev);
  }
  band.raw_len = d.filtered.size();
  band.adler = libdeflate_adler32(1, d.filtered.data(), d.filtered.size());

  const bool last = index == bands - 1;
  std::size_t prefix = index == 0 ? 2 : 0;
  band.data.clear();
  if (index == 0) {
    std::uint16_t h = zlib_header(options.level);
    band.data.push_back(static_cast<char>(h >> 8));
    band.data.push_back(static_cast<char>(h & 0xff));
  }
  bool ok = false;
#ifdef EVIDENT_HAVE_ISAL
  if (options.deflater == PngDeflater::kIsal) {
    ok = deflate_isal(d, options.level, last, band.data, prefix);
  } else {
    ok = deflate_zlib(d, options.level, last, band.data, prefix);
  }
#else
  // Built without ISA-L: kIsal is served by zlib at the same level.
  ok = deflate_zlib(d, options.level, last, band.data, prefix);
#endif
  if (!ok) return;
  band.crc = idat_crc(band.data);
  band.ok = true;
}

Error encode_error(const std::string& why) { return make_error("png-encode-failed", why); }

}  // namespace

#ifdef EVIDENT_HAVE_ISAL
bool isal_available() { return true; }
std::size_t isal_stream_bytes() { return sizeof(isal_zstream); }
bool isal_deflate_band_at(void* storage, const std::uint8_t* filtered, std::size_t n, int level,
                          bool last, std::string* out) {
  if (level < 0 || level > 3) return false;
  auto* s = new (storage) isal_zstream();
  std::vector<std::uint8_t> level_buf, buf;
  out->clear();
  return deflate_isal_into(*s, level_buf, buf, filtered, n, level, last, *out, 0) ==
         IsalOutcome::kOk;
}
#else
bool isal_available() { return false; }
std::size_t isal_stream_bytes() { return 0; }
bool isal_deflate_band_at(void*, const std::uint8_t*, std::size_t, int, bool, std::string*) {
  return false;
}
#endif

Result<PngFrame> encode_png_rows(int width, int height, const RowSource& rows,
                                 const PngOptions& options, BandReuse* reuse) {
  if (width <= 0 || height <= 0 || width > kMaxDimension || height > kMaxDimension) {
    return encode_error("image size out of range");
  }
  if (options.band_rows <= 0) return encode_error("band_rows must be positive");
  if (options.level < 0 || options.level > 9) return encode_error("level must be 0..9");
  if (options.deflater == PngDeflater::kIsal && options.level > 3) {
    return encode_error("level must be 0..3 with the ISA-L deflater");
  }

  const int bands = (height + options.band_rows - 1) / options.band_rows;
  std::vector<Band> local;
  std::vector<Band>& out = reuse != nullptr && reuse->cache != nullptr ? *reuse->cache : local;
  if (static_cast<int>(out.size()) != bands) {
    out.clear();
    out.resize(bands);
  }
  auto span = [&](int i, int* y0, int* y1) {
    *y0 = i * options.band_rows;
    *y1 = std::min(height, *y0 + options.band_rows);
  };
  std::vector<char> redo(bands, 1);
  auto run = [&](const std::function<void(int)>& fn) {
    if (options.threads == 1) {
      for (int i = 0; i < bands; ++i) fn(i);
    } else {
      parallel_for(bands, fn);
    }
  };
  if (&out != &local && reuse->unchanged) {
    run([&](int i) {
      int y0, y1;
      span(i, &y0, &y1);
      redo[i] = !(out[i].ok && reuse->unchanged(i, y0, y1));
    });
  }
  run([&](int i) {
    if (!redo[i]) return;
    out[i] = Band{};
    encode_band(i, bands, width, height, rows, options, out[i]);
    if (out[i].ok && &out != &local && reuse->encoded) {
      int y0, y1;
      span(i, &y0, &y1);
      reuse->encoded(i, y0, y1);
    }
  });

  uLong adler = 1;
  std::size_t total = 8 + 25 + 12 + 4;
  for (Band& b : out) {
    if (!b.ok) {
      for (Band& c : out) c.ok = false;  // never reuse a half-built frame
      return encode_error("deflate failed");
    }
    adler = adler32_combine(adler, b.adler, static_cast<z_off_t>(b.raw_len));
    total += b.data.size() + 12;
  }

  PngFrame frame;
  frame.width = width;
  frame.height = height;
  std::string& png = frame.bytes;
  png.reserve(total + 4);
  static const char kSignature[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
  png.append(kSignature, 8);
  std::string ihdr;
  put_u32(ihdr, static_cast<std::uint32_t>(width));
  put_u32(ihdr, static_cast<std::uint32_t>(height));
  ihdr.append({'\x08', '\x02', '\x00', '\x00', '\x00'});  // 8-bit, RGB, deflate, filter 0, no interlace
  put_chunk(png, "IHDR", ihdr);
  // IDAT chunks are written from the bands; the last one also carries the adler32 trailer.
  for (int i = 0; i < bands; ++i) {
    const Band& b = out[i];
    const bool last = i == bands - 1;
    put_u32(png, static_cast<std::uint32_t>(b.data.size() + (last ? 4 : 0)));
    png.append("IDAT", 4);
    png.append(b.data);
    std::uint32_t crc = b.crc;
    if (last) {
      std::string trailer;
      put_u32(trailer, static_cast<std::uint32_t>(adler));
      png.append(trailer);
      crc = static_cast<std::uint32_t>(
          crc32(crc, reinterpret_cast<const Bytef*>(trailer.data()), 4));
    }
    put_u32(png, crc);
  }
  put_chunk(png, "IEND", std::string());
  frame.sha256 = sha256_hex(png.data(), png.size());
  return frame;
}

}  // namespace detail

Result<PngFrame> encode_png(const RawImage& image, const PngOptions& options) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return make_error("png-encode-failed", "image size does not match its pixel buffer");
  }
  const std::uint8_t* base = image.rgb.data();
  const std::size_t row_bytes = static_cast<std::size_t>(image.width) * 3;
  return detail::encode_png_rows(
      image.width, image.height,
      [base, row_bytes](int y, std::uint8_t*) { return base + row_bytes * y; }, options);
}

Result<PngFrame> encode_png(const RawImage& image) { return encode_png(image, PngOptions{}); }

}  // namespace evident
