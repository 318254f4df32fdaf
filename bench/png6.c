/* Reference encoder for the screenshot row: reads a binary PPM (P6, 8-bit) on stdin and writes
   a PNG with libpng's defaults at zlib level 6 (adaptive filtering) to stdout, so the benchmark
   can compare evident's PNG size with "libpng level 6" on the same pixels. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int w = 0, h = 0, maxval = 0;
  if (scanf("P6 %d %d %d", &w, &h, &maxval) != 3 || maxval != 255 || w <= 0 || h <= 0) return 2;
  fgetc(stdin);
  size_t stride = (size_t)w * 3;
  unsigned char *pix = malloc(stride * (size_t)h);
  if (!pix || fread(pix, 1, stride * (size_t)h, stdin) != stride * (size_t)h) return 2;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (!png || !info || setjmp(png_jmpbuf(png))) return 3;
  png_init_io(png, stdout);
  png_set_compression_level(png, 6);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; y++) png_write_row(png, pix + stride * (size_t)y);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(pix);
  return 0;
}
