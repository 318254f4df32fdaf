"""Test driver: runs the independent Python verifier (bindings/python/evident/verify.py) on many
receipt files in one process, for the C++ agreement tests.

stdin: JSON {"verify_py": PATH, "jobs": [{"path", "frames_dir", "png_path", "expect_job_sha256",
"expect_uid", "prior_path"?}, ...]}; stdout: JSON [{"error": code|null, "ok": bool, "failed": [names]}, ...].
"""
import importlib.util
import json
import sys

req = json.load(sys.stdin)
spec = importlib.util.spec_from_file_location("evident_verify_under_test", req["verify_py"])
verify = importlib.util.module_from_spec(spec)
spec.loader.exec_module(verify)
results = []
for job in req["jobs"]:
    try:
        receipt = verify.load_receipt_file(job["path"])
    except verify.ReceiptFormatError as e:
        results.append({"error": e.code, "ok": False, "failed": []})
        continue
    prior = None
    if job.get("prior_path"):
        prior = verify.load_receipt_file(job["prior_path"])
    report = verify.verify_receipt(receipt, prior=prior, frames_dir=job.get("frames_dir") or None,
                                   png_path=job.get("png_path") or None,
                                   expect_job_sha256=job.get("expect_job_sha256") or None,
                                   expect_uid=job.get("expect_uid"))
    results.append({"error": None, "ok": report["ok"],
                    "failed": [c["name"] for c in report["checks"] if not c["ok"]],
                    "names": [c["name"] for c in report["checks"]]})
json.dump(results, sys.stdout)
