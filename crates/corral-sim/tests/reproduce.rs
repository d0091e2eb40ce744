//! `corral reproduce`'s library: one cheap figure writes its three files,
//! an unknown name is refused with the known ones listed.

use corral_sim::reproduce::{find, reproduce, Scale, FIGURES};

#[test]
fn a_cheap_figure_writes_svg_csv_and_text() {
    let dir = std::env::temp_dir().join(format!("corral-reproduce-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fig = find("p3-fig2").unwrap();
    let scale = Scale {
        seconds: 0.002,
        max_cores: Some(2),
    };
    let r = reproduce(fig, &dir, scale).unwrap();
    assert!(r.redone);
    for ext in ["svg", "csv", "txt"] {
        let text = std::fs::read_to_string(dir.join(format!("p3-fig2.{ext}"))).unwrap();
        assert!(!text.is_empty(), "{ext} is empty");
    }
    let csv = std::fs::read_to_string(dir.join("p3-fig2.csv")).unwrap();
    // The stated FOPS peak (2 cores, Sec. 2) sits beside corral's.
    assert!(
        csv.lines()
            .any(|l| l.starts_with("fops,ticket,,peak_cores,") && l.contains(",2,")),
        "{csv}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_figure_names_the_known_ones() {
    let msg = find("p9-fig99").unwrap_err().to_string();
    assert!(msg.contains("p9-fig99"), "{msg}");
    for f in FIGURES {
        assert!(msg.contains(f.name), "{msg}");
    }
}

#[test]
fn a_figure_that_cannot_be_redone_says_why() {
    let dir = std::env::temp_dir().join(format!("corral-reproduce-cannot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scale = Scale {
        seconds: 0.001,
        max_cores: Some(1),
    };
    let r = reproduce(find("p5-fig7-8").unwrap(), &dir, scale).unwrap();
    assert!(!r.redone && r.reason.is_some());
    let text = std::fs::read_to_string(dir.join("p5-fig7-8.txt")).unwrap();
    assert!(text.contains("not redone here:"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
