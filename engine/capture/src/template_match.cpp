// Template search with OpenCV (evident/capture/waits.h, docs/windows.md "Finding an image").
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "evident/capture/waits.h"

namespace evident {

Json ImageMatch::to_json() const {
  return Json{{"x", x}, {"y", y}, {"width", width}, {"height", height},
              {"score_permille", score_permille}};
}

Status validate_template(const RawImage& t) {
  const std::int64_t pixels = static_cast<std::int64_t>(t.width) * t.height;
  if (t.width <= 0 || t.height <= 0 || t.rgb.size() != static_cast<std::size_t>(pixels) * 3) {
    return make_error("wait-reference-invalid", "the template image is empty");
  }
  if (pixels > kMaxTemplatePixels) {
    return make_error("wait-reference-invalid",
                      "the template image has more than " + std::to_string(kMaxTemplatePixels) +
                          " pixels");
  }
  bool flat = true;
  for (std::size_t i = 3; i < t.rgb.size() && flat; i += 3) {
    flat = std::memcmp(&t.rgb[i], &t.rgb[0], 3) == 0;
  }
  if (flat) {
    return make_error("wait-reference-invalid",
                      "the template image is of one colour: it has no pattern to search for "
                      "(wait for the colour with wait pixels --color instead)");
  }
  return {};
}

Result<ImageMatch> match_template(const RawImage& image, const RawImage& templ) {
  EVIDENT_TRY(validate_template(templ));
  if (templ.width > image.width || templ.height > image.height) {
    return make_error("wait-reference-invalid",
                      "the template image is larger than the region searched");
  }
  if (static_cast<std::int64_t>(image.width) * image.height > kMaxSearchPixels ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return make_error("wait-reference-invalid", "the region searched is too large");
  }
  try {
    // Views, no copies: OpenCV only reads them.
    const cv::Mat img(image.height, image.width, CV_8UC3,
                      const_cast<std::uint8_t*>(image.rgb.data()));
    const cv::Mat t(templ.height, templ.width, CV_8UC3,
                    const_cast<std::uint8_t*>(templ.rgb.data()));
    cv::Mat result;
    cv::matchTemplate(img, t, result, cv::TM_CCOEFF_NORMED);
    double min_v = 0, max_v = 0;
    cv::Point min_at, max_at;
    cv::minMaxLoc(result, &min_v, &max_v, &min_at, &max_at);
    if (!std::isfinite(max_v)) max_v = 0;
    ImageMatch m;
    m.x = max_at.x;
    m.y = max_at.y;
    m.width = templ.width;
    m.height = templ.height;
    // Rounding noise of the sums can put an exact copy a hair above 1 (or below -1).
    m.score_permille = static_cast<int>(std::clamp(std::floor(max_v * 1000.0 + 1e-6), -1000.0, 1000.0));
    return m;
  } catch (const cv::Exception&) {
    return make_error("internal", "the template search failed (OpenCV)");
  }
}

}  // namespace evident
