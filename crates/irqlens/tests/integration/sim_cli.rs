//! `irqlens sim` from the command line (no root): the example model and its designs,
//! the same document for the same seed, an edited model, and bad input.

use std::fs;

use crate::common::*;

#[test]
fn the_example_model_runs_every_design_the_same_way_twice() {
    let args = ["sim", "-d", "200ms"];
    // checked against the published schema
    let document = irqlens_json(&args);
    assert_eq!(document["command"], "sim");
    assert_eq!(document["cpus"], serde_json::json!([0]));
    let designs = document["designs"].as_array().unwrap();
    let names: Vec<_> = designs
        .iter()
        .map(|d| d["design"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "stock",
            "threaded-fifo",
            "threaded-niced+budget",
            "threaded-fifo+ihm",
            "threaded-fifo+ihm-dis",
            "stock+process-aware"
        ]
    );
    for design in designs {
        // 20k packets/s for 0.2 s, none lost at this load.
        let delivered = design["consumers"][0]["delivered"].as_u64().unwrap();
        assert!((3_500..=4_500).contains(&delivered), "{design}");
    }
    assert_eq!(run_json(&args).unwrap(), document);
    let text = irqlens_ok(&args);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Interrupt-driven tasks"), "{text}");
    assert!(text.contains("stock+process-aware"), "{text}");
}

#[test]
fn an_edited_model_is_read_and_bad_input_refused() {
    let dir = std::env::temp_dir().join(format!("irqlens-sim-cli-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let example = irqlens_ok(&["sim", "--example"]).stdout;
    let mut model: serde_json::Value = serde_json::from_slice(&example).unwrap();
    model["tasks"][0]["priority"] = "f:60".into();
    let path = dir.join("model.json");
    fs::write(&path, model.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let document = run_json(&[
        "sim",
        path,
        "--design",
        "threaded-fifo+ihm-dis",
        "--seed",
        "5",
        "-d",
        "100ms",
    ])
    .unwrap();
    assert_eq!(document["seed"], 5);
    assert_eq!(document["designs"].as_array().unwrap().len(), 1);

    model["tasks"][0]["cpu"] = 3.into();
    let wrong_cpu = dir.join("wrong-cpu.json");
    fs::write(&wrong_cpu, model.to_string()).unwrap();
    assert_fails_with(&["sim", wrong_cpu.to_str().unwrap()], "the model has 1");
    let not_a_model = dir.join("empty.json");
    fs::write(&not_a_model, "{}").unwrap();
    assert_fails_with(
        &["sim", not_a_model.to_str().unwrap()],
        "is not a sim model",
    );
    assert_fails_with(&["sim", "--design", "fast"], "is not a design");
    fs::remove_dir_all(&dir).unwrap();
}
