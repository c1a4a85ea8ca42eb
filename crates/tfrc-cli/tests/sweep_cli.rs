//! `tfrc sweep` as a user runs it: a grid × seeds into one Parquet dataset, resumed, guarded.

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt64Array};
use assert_cmd::Command;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tfrc_test_support::{flow, read_json, Scratch, DUMBBELL_1MBPS_50MS};

/// TFRC and TCP on the dumbbell for 5 s, with a grid of 2 delays × 2 buffers.
fn grid_scenario() -> String {
    format!(
        "name = \"grid\"\nduration = \"5s\"\nseed = 3\n{DUMBBELL_1MBPS_50MS}{}{}\n[sweep]\n\
         \"link.1.delay\" = [\"24ms\", \"49ms\"]\n\"link.1.queue.limit\" = [10, 40]\n",
        flow("a", "tfrc", &[]),
        flow("t", "tcp", &[])
    )
}

fn sweep(file: &Path, out: &Path) -> Command {
    let mut command = Command::cargo_bin("tfrc").unwrap();
    command.args([
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    command
}

fn parquet_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    files
}

/// A small Parquet file's only record batch.
fn read_table(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1, "one batch per small file");
    batches[0].clone()
}

fn cell_text(batch: &RecordBatch, column: &str, row: usize) -> String {
    batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .value(row)
        .to_owned()
}

fn number(batch: &RecordBatch, column: &str, row: usize) -> Option<f64> {
    let array = batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"));
    let array = array.as_any().downcast_ref::<Float64Array>().unwrap();
    (!array.is_null(row)).then(|| array.value(row))
}

#[test]
fn a_grid_times_seeds_gives_one_run_per_point_and_seed_with_the_simulators_numbers() {
    let scratch = Scratch::new();
    let file = scratch.write("grid.toml", &grid_scenario());
    let out = scratch.join("dataset");
    sweep(&file, &out)
        .args(["--seeds", "1-2", "--jobs", "2"])
        .assert()
        .success();
    for table in ["runs", "flows", "state", "links"] {
        assert_eq!(parquet_files(&out.join(table)).len(), 8, "{table}");
    }
    let manifest = read_json(&out.join("sweep.json"));
    assert_eq!(manifest["scenario"], "grid");
    assert_eq!(manifest["parameters"][0]["name"], "delay");
    assert_eq!(manifest["parameters"][0]["type"], "text");
    assert_eq!(manifest["parameters"][1]["name"], "limit");
    assert_eq!(manifest["parameters"][1]["type"], "integer");
    assert!(manifest["tool"].as_str().unwrap().contains("git"));

    // Every run's rows are `tfrc sim`'s summary of the same variant and seed.
    let text = grid_scenario();
    let plain = scratch.write("plain.toml", &text[..text.find("[sweep]").unwrap()]);
    let mut seen = std::collections::BTreeSet::new();
    for path in parquet_files(&out.join("runs")) {
        let runs = read_table(&path);
        assert_eq!(runs.num_rows(), 2, "one row per flow");
        let seed = runs
            .column_by_name("seed")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .value(0);
        let delay = cell_text(&runs, "delay", 0);
        let limit = runs
            .column_by_name("limit")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .value(0);
        seen.insert((delay.clone(), limit, seed));
        assert_eq!(
            path.file_stem().unwrap().to_str().unwrap(),
            cell_text(&runs, "run_id", 0)
        );
        let single = scratch.join(&format!("sim-{delay}-{limit}-{seed}"));
        Command::cargo_bin("tfrc")
            .unwrap()
            .args(["sim", plain.to_str().unwrap(), "--quiet", "--seed"])
            .arg(seed.to_string())
            .args(["--set", &format!("link.1.delay={delay}")])
            .args(["--set", &format!("link.1.queue.limit={limit}")])
            .arg("--out")
            .arg(&single)
            .assert()
            .success();
        let summary = read_json(&single.join("summary.json"));
        for row in 0..2 {
            let name = cell_text(&runs, "name", row);
            let expected = summary["flows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|flow| flow["name"] == name.as_str())
                .unwrap();
            assert_eq!(
                number(&runs, "goodput_bps", row),
                expected["goodput_bps"].as_f64(),
                "{name} delay {delay} limit {limit} seed {seed}"
            );
            assert_eq!(
                number(&runs, "mean_rtt_s", row),
                expected["mean_rtt_s"].as_f64()
            );
        }
        assert_eq!(
            number(&runs, "jain_index", 0),
            summary["jain_index"].as_f64()
        );
        // The time series of the same run: a row per flow per second.
        let flows = read_table(&out.join("flows").join(path.file_name().unwrap()));
        assert_eq!(flows.num_rows(), 2 * 5);
        assert_eq!(
            cell_text(&flows, "run_id", 0),
            cell_text(&runs, "run_id", 0)
        );
    }
    assert_eq!(seen.len(), 8, "every point × seed once: {seen:?}");
}

/// A sweep over the TCP flow's congestion control, today's beside the papers': one run per
/// variant, the `variant` column naming it, each run the simulator's run of that variant (CUBIC's
/// and BBR's numbers differ from NewReno's and from each other); a variant the model lacks is an
/// error naming the key.
#[test]
fn a_sweep_over_the_tcp_variant_runs_cubic_and_bbr() {
    let scratch = Scratch::new();
    let text = format!(
        "name = \"tcps\"\nduration = \"10s\"\nseed = 3\n{DUMBBELL_1MBPS_50MS}{}{}\n[sweep]\n\
         \"flow.t.variant\" = [\"newreno\", \"cubic\", \"bbr\"]\n",
        flow("a", "tfrc", &[]),
        flow("t", "tcp", &[])
    );
    let file = scratch.write("tcps.toml", &text);
    let out = scratch.join("dataset");
    sweep(&file, &out).args(["--jobs", "2"]).assert().success();
    let manifest = read_json(&out.join("sweep.json"));
    assert_eq!(manifest["parameters"][0]["name"], "variant");
    let plain = scratch.write("plain.toml", &text[..text.find("[sweep]").unwrap()]);
    let mut goodputs = std::collections::BTreeMap::new();
    for path in parquet_files(&out.join("runs")) {
        let runs = read_table(&path);
        let variant = cell_text(&runs, "variant", 0);
        let row = (0..runs.num_rows())
            .find(|&row| cell_text(&runs, "name", row) == "t")
            .unwrap();
        let goodput = number(&runs, "goodput_bps", row).unwrap();
        let single = scratch.join(&format!("sim-{variant}"));
        Command::cargo_bin("tfrc")
            .unwrap()
            .args(["sim", plain.to_str().unwrap(), "--quiet"])
            .args(["--set", &format!("flow.t.variant={variant}")])
            .arg("--out")
            .arg(&single)
            .assert()
            .success();
        let summary = read_json(&single.join("summary.json"));
        let expected = summary["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|flow| flow["name"] == "t")
            .unwrap();
        assert_eq!(Some(goodput), expected["goodput_bps"].as_f64(), "{variant}");
        assert!(goodput > 100e3, "{variant}: {goodput} b/s");
        goodputs.insert(variant, goodput);
    }
    assert_eq!(
        goodputs.keys().map(String::as_str).collect::<Vec<_>>(),
        ["bbr", "cubic", "newreno"]
    );
    assert!(goodputs["cubic"] != goodputs["newreno"] && goodputs["bbr"] != goodputs["cubic"]);
    let bad = scratch.write(
        "vegas.toml",
        &text.replace("\"bbr\"]", "\"bbr\", \"vegas\"]"),
    );
    let failed = sweep(&bad, &scratch.join("bad")).output().unwrap();
    assert!(!failed.status.success());
    let message = String::from_utf8_lossy(&failed.stderr);
    assert!(
        message.contains("variant") && message.contains("vegas"),
        "{message}"
    );
}

#[test]
fn a_rerun_skips_finished_runs_and_redoes_only_an_interrupted_one() {
    let scratch = Scratch::new();
    let file = scratch.write("grid.toml", &grid_scenario());
    let out = scratch.join("dataset");
    sweep(&file, &out).assert().success();
    let runs = parquet_files(&out.join("runs"));
    assert_eq!(runs.len(), 4);
    let kept = std::fs::read(&runs[1]).unwrap();
    let kept_time = std::fs::metadata(&runs[1]).unwrap().modified().unwrap();
    // A crash after a run's series files and before its `runs/` file, with a half-written file.
    std::fs::remove_file(&runs[0]).unwrap();
    std::fs::write(out.join("flows").join("x.parquet.tmp"), b"half").unwrap();
    let output = Command::cargo_bin("tfrc")
        .unwrap()
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("4 runs: 1 run now") && said.contains("3 already"),
        "{said}"
    );
    assert_eq!(parquet_files(&out.join("runs")).len(), 4);
    assert!(!out.join("flows").join("x.parquet.tmp").exists());
    assert_eq!(std::fs::read(&runs[1]).unwrap(), kept);
    assert_eq!(
        std::fs::metadata(&runs[1]).unwrap().modified().unwrap(),
        kept_time
    );
}

#[test]
fn runs_of_another_build_or_scenario_are_refused_unless_allowed() {
    let scratch = Scratch::new();
    let file = scratch.write("grid.toml", &grid_scenario());
    let out = scratch.join("dataset");
    sweep(&file, &out).assert().success();
    let manifest_path = out.join("sweep.json");
    let text = std::fs::read_to_string(&manifest_path).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    manifest["tool"] = "tfrc 0.0.1 (git 000000000000)".into();
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let refused = sweep(&file, &out).args(["--seeds", "7"]).assert().failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains("tfrc 0.0.1 (git 000000000000)") && said.contains("--allow-mixed-versions"),
        "{said}"
    );
    assert_eq!(parquet_files(&out.join("runs")).len(), 4, "nothing added");
    sweep(&file, &out)
        .args(["--seeds", "7", "--allow-mixed-versions"])
        .assert()
        .success();
    assert_eq!(parquet_files(&out.join("runs")).len(), 8);

    // Another grid into the same dataset would not stack.
    let other = scratch.write(
        "other.toml",
        &grid_scenario().replace("\"link.1.queue.limit\" = [10, 40]\n", ""),
    );
    let refused = sweep(&other, &out).assert().failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains("parameters") && said.contains("limit"),
        "{said}"
    );
}

#[test]
fn bad_seeds_and_empty_grids_are_errors_that_name_them() {
    let scratch = Scratch::new();
    let file = scratch.write("grid.toml", &grid_scenario());
    let out = scratch.join("dataset");
    for (seeds, expected) in [
        ("5-2", "runs backwards"),
        ("1,x", "\"x\" is not a seed"),
        ("1,1", "seed 1 is listed twice"),
        ("0-999999999", "more than"),
    ] {
        let failed = sweep(&file, &out)
            .args(["--seeds", seeds])
            .assert()
            .failure();
        let said = String::from_utf8_lossy(&failed.get_output().stderr).into_owned();
        assert!(said.contains(expected), "--seeds {seeds}: {said}");
    }
    let empty = scratch.write("empty.toml", &grid_scenario().replace("[10, 40]", "[]"));
    let failed = sweep(&empty, &out).assert().failure();
    let said = String::from_utf8_lossy(&failed.get_output().stderr).into_owned();
    assert!(said.contains("limit"), "{said}");
    assert!(!out.exists(), "nothing written for a bad input");
}

#[test]
fn dask_without_the_python_package_says_what_to_install() {
    let scratch = Scratch::new();
    let file = scratch.write("grid.toml", &grid_scenario());
    let out = scratch.join("dataset");
    let failed = sweep(&file, &out)
        .args([
            "--dask",
            "tcp://127.0.0.1:9",
            "--python",
            "/nonexistent/python3",
        ])
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&failed.get_output().stderr).into_owned();
    assert!(
        said.contains("--dask") && said.contains("/nonexistent/python3"),
        "{said}"
    );
    assert!(!out.exists());
}
