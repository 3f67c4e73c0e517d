#!/usr/bin/env python3
"""Compares what the application wrote on two kNN backends and prints one JSON line.

  app_compare.py match CPU.json GPU.json      `featmatch match --report` files
  app_compare.py logos CPU.json GPU.json      `featmatch logos eval --report` files
  app_compare.py query CPU.json GPU.json      `featmatch logos query --json` outputs
  app_compare.py batch CPU.db GPU.db          `featmatch batch` COLMAP databases

On uint8 SIFT descriptors both backends compute exact integer distances, so every match, every
verified model and every detection should be the same; `same` says whether they are, and the
fields beside it say what differs where they are not (on float descriptors the distances may
differ in their last bits: `same_pairs_and_inliers`, `max_relative_distance_difference`). Exit
status 0 when the two agree, 1 when not, 2 on unreadable input.
"""
import json
import sqlite3
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def match_key(m):
    return (m["a"], m["b"], m["distance"], m["ratio"], m["inlier"])


def compare_match(a_path, b_path):
    a, b = load(a_path), load(b_path)
    ma = [match_key(m) for m in a["match_list"]]
    mb = [match_key(m) for m in b["match_list"]]
    pairs_a = {(m[0], m[1]) for m in ma}
    pairs_b = {(m[0], m[1]) for m in mb}
    ga, gb = a["geometry"], b["geometry"]
    same = ma == mb and ga.get("inliers") == gb.get("inliers") and \
        ga.get("verified") == gb.get("verified")
    # Float descriptors: the two sums of products round differently, so the distances may differ
    # in their last bits while the pairs and the model stay the same.
    same_pairs = [(m[0], m[1], m[4]) for m in ma] == [(m[0], m[1], m[4]) for m in mb]
    rel = max((abs(x[2] - y[2]) / max(abs(x[2]), 1e-30) for x, y in zip(ma, mb)), default=0.0)
    return same, {
        "inputs": [a["inputs"]["a"].rsplit("/", 1)[-1], a["inputs"]["b"].rsplit("/", 1)[-1]],
        "same_pairs_and_inliers": same_pairs,
        "max_relative_distance_difference": rel,
        "features": [a["features"]["a"], a["features"]["b"]],
        "matches": [len(ma), len(mb)],
        "matches_in_both": len(pairs_a & pairs_b),
        "inliers": [ga.get("inliers"), gb.get("inliers")],
        "verified": [ga.get("verified"), gb.get("verified")],
        "knn_ms": [a["times_ms"].get("knn"), b["times_ms"].get("knn")],
        "backends": [a["backend"], b["backend"]],
    }


def detections(report):
    out = []
    for s in report["scenes"]:
        out.append(sorted((d["name"], d["inliers"], d["correct"]) for d in s["detections"]))
    return out


def compare_logos(a_path, b_path):
    a, b = load(a_path), load(b_path)
    da, db = detections(a), detections(b)
    differ = [i for i, (x, y) in enumerate(zip(da, db)) if x != y]
    same = len(da) == len(db) and not differ
    keys = ("top1_accuracy", "precision", "recall", "false_positive_rate",
            "median_corner_error_px")
    return same, {
        "scenes": [len(da), len(db)],
        "scenes_that_differ": differ[:20],
        "metrics": {k: [a["metrics"].get(k), b["metrics"].get(k)] for k in keys},
        "median_knn_ms": [a["times_ms"].get("median_knn"), b["times_ms"].get("median_knn")],
        "median_query_ms": [a["times_ms"].get("median_query_total"),
                            b["times_ms"].get("median_query_total")],
        "backends": [a["settings"]["backend"], b["settings"]["backend"]],
    }


def compare_query(a_path, b_path):
    a, b = load(a_path), load(b_path)

    def dets(scene):
        return [(d["name"], d["inliers"], d["candidate_matches"], d["quad"])
                for d in scene["detections"]]
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if dets(x) != dets(y)]
    same = len(a) == len(b) and not differ
    return same, {
        "scenes": [len(a), len(b)],
        "scenes_that_differ": differ[:20],
        "detections": [sum(len(s["detections"]) for s in a),
                       sum(len(s["detections"]) for s in b)],
        "knn_ms": [[s["times_ms"]["knn"] for s in a][:5], [s["times_ms"]["knn"] for s in b][:5]],
        "backends": [sorted({s["backend"] for s in a}), sorted({s["backend"] for s in b})],
    }


def rows(path, table, cols):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0]: r[1:] for r in con.execute(f"SELECT {cols} FROM {table}")}
    finally:
        con.close()


def compare_batch(a_path, b_path):
    out = {}
    same = True
    for table, cols in (("images", "image_id, name"),
                        ("keypoints", "image_id, rows, data"),
                        ("matches", "pair_id, rows, data"),
                        ("two_view_geometries", "pair_id, rows, config, data, F, H")):
        ra, rb = rows(a_path, table, cols), rows(b_path, table, cols)
        differ = sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))
        out[table] = {"rows": [len(ra), len(rb)], "differ": len(differ)}
        same = same and not differ
    tv = rows(a_path, "two_view_geometries", "pair_id, config")
    out["verified_pairs"] = sum(1 for v in tv.values() if v[0] != 0 and v[0] != 1)
    return same, out


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("match", "logos", "query", "batch"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, a, b = sys.argv[1:]
    try:
        same, info = {"match": compare_match, "logos": compare_logos,
                      "query": compare_query, "batch": compare_batch}[kind](a, b)
    except (OSError, KeyError, ValueError, sqlite3.Error) as e:
        print(json.dumps({"compare": kind, "error": str(e)}))
        return 2
    print(json.dumps({"compare": kind, "same": same, **info}))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
