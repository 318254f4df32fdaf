// The OpenCV half of the template search, built as the loadable module libevident-match.so
// (template_match_module.h says why). Only template_match.cpp calls it, after its checks.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "template_match_module.h"

extern "C" __attribute__((visibility("default"))) int evident_match_template_v1(
    const EvidentMatchRequest* rq, EvidentMatchReply* out) {
  try {
    // Views, no copies: OpenCV only reads them.
    const cv::Mat img(rq->height, rq->width, CV_8UC3, const_cast<std::uint8_t*>(rq->image));
    const cv::Mat t(rq->templ_height, rq->templ_width, CV_8UC3,
                    const_cast<std::uint8_t*>(rq->templ));
    cv::Mat result;
    cv::matchTemplate(img, t, result, cv::TM_CCOEFF_NORMED);
    double min_v = 0, max_v = 0;
    cv::Point min_at, max_at;
    cv::minMaxLoc(result, &min_v, &max_v, &min_at, &max_at);
    out->x = max_at.x;
    out->y = max_at.y;
    out->score = max_v;
    return 0;
  } catch (...) {
    return 1;
  }
}
