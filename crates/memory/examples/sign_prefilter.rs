//! How much of the exact vector top 10 the vector index's two-stage scan keeps: rows pre-ranked
//! by the query's dot product with their sign bits, the best fraction re-scored exactly. Run on a
//! BEIR-layout folder with the built-in embedder:
//!
//! ```text
//! cargo run --profile fast -p openhuman-memory --example sign_prefilter -- <beir-dir> [queries]
//! ```
//!
//! Each document's text is cut into 40-word chunks (more rows than documents, as in a store);
//! every query's exact top 10 (f32 cosine) is compared with the top 10 after re-scoring the best
//! 0.2%, 0.5%, 0.78% (what a 1M-row index re-scores) and 1% of the rows by sign, over all rows
//! or over those that a Hamming pass on the sign bits kept first (4, 8 or 16 times as many as
//! are re-scored). A second table runs the index's passes as they are now: codes against the
//! rows' mean, a Hamming pass over the signs of the first 128 components keeping 1/16 of the
//! rows, the sign score, the best 1/128 re-scored; beside it other widths, shares and rankers.
//! The figures are recall@10 against the exact scan.
#![allow(clippy::print_stdout, reason = "an example's report is its output")]

use std::io::BufRead;

use openhuman_memory::embed::StaticModel;

fn texts(path: &str) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    std::io::BufReader::new(file)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l.expect("read line")).expect("one JSON object a line");
            v["text"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The query's dot product with the row's sign vector (±1 a component).
fn sign_score(q: &[f32], row: &[f32]) -> f32 {
    q.iter().zip(row).map(|(x, r)| if *r >= 0.0 { *x } else { -*x }).sum()
}

fn ranked(mut scored: Vec<(usize, f32)>) -> Vec<usize> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|s| s.0).collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: sign_prefilter <beir-dir> [queries]");
    let max_queries: usize = args.next().map_or(300, |n| n.parse().expect("a number of queries"));
    let model = StaticModel::builtin().expect("built-in model");
    let chunks: Vec<String> = texts(&format!("{dir}/corpus.jsonl"))
        .iter()
        .flat_map(|t| t.split_whitespace().collect::<Vec<_>>().chunks(40).map(|c| c.join(" ")).collect::<Vec<_>>())
        .collect();
    let rows: Vec<Vec<f32>> = chunks.iter().map(|t| model.embed_one(t)).collect();
    let queries: Vec<Vec<f32>> =
        texts(&format!("{dir}/queries.jsonl")).iter().take(max_queries).map(|q| model.embed_one(q)).collect();
    println!("{} rows of {} dims, {} queries", rows.len(), rows.first().map_or(0, Vec::len), queries.len());
    println!("| re-scored | rows | recall@10 vs exact: sign score | Hamming keeps 4× first | 8× | 16× |");
    println!("|---|---|---|---|---|---|");
    let first_passes = [None, Some(4), Some(8), Some(16)];
    for fraction in [0.002, 0.005, 1.0 / 128.0, 0.01] {
        let keep = ((rows.len() as f64 * fraction) as usize).max(10);
        let mut kept = [0usize; 4];
        for q in &queries {
            let exact = ranked(rows.iter().map(|r| dot(q, r)).enumerate().collect());
            let near = ranked(rows.iter().map(|r| -(hamming(q, r) as f32)).enumerate().collect());
            for (k, share) in first_passes.iter().enumerate() {
                let pool: Vec<usize> = match share {
                    None => (0..rows.len()).collect(),
                    Some(s) => near[..(keep * s).min(rows.len())].to_vec(),
                };
                let pre = ranked(pool.iter().map(|&i| (i, sign_score(q, &rows[i]))).collect());
                let rescored = ranked(pre[..keep].iter().map(|&i| (i, dot(q, &rows[i]))).collect());
                kept[k] += rescored[..10].iter().filter(|i| exact[..10].contains(i)).count();
            }
        }
        let share = |k: usize| kept[k] as f64 / (10 * queries.len()) as f64;
        println!(
            "| {:.2}% | {keep} | {:.4} | {:.4} | {:.4} | {:.4} |",
            fraction * 100.0,
            share(0),
            share(1),
            share(2),
            share(3)
        );
    }
    short_codes(&rows, &queries);
}

/// The index's passes as it runs them past its threshold, on codes taken against the rows'
/// mean (the query without its part along the mean): a Hamming pass over the signs of the
/// first 128 components keeps a share of the rows, those are ranked by their whole sign
/// code (the sign score, or a Hamming distance over all the bits), and the best are re-scored
/// exactly.
fn short_codes(rows: &[Vec<f32>], queries: &[Vec<f32>]) {
    let dims = rows[0].len();
    let mut mean = vec![0f32; dims];
    for r in rows {
        mean.iter_mut().zip(r).for_each(|(m, x)| *m += x / rows.len() as f32);
    }
    let mm = dot(&mean, &mean);
    let centred: Vec<Vec<f32>> = rows.iter().map(|r| r.iter().zip(&mean).map(|(x, m)| x - m).collect()).collect();
    println!();
    println!("Codes against the rows' mean (its length {:.3}):", mm.sqrt());
    println!();
    println!("| Hamming pass over | keeps | then ranked by | re-scored | recall@10 |");
    println!("|---|---|---|---|---|");
    let head = dims.min(128);
    let n = rows.len();
    for (bits, keep_share, by_sign, rescore) in [
        (dims, 8usize, true, 128usize),
        (head, 8, true, 128),
        (head, 16, true, 128),
        (head, 32, true, 128),
        (head, 16, false, 128),
        (head, 16, true, 256),
        (head, 8, true, 256),
    ] {
        let keep = (n / rescore).max(10);
        let mut kept = 0;
        for q in queries {
            let a = dot(q, &mean) / mm;
            let qc: Vec<f32> = q.iter().zip(&mean).map(|(x, m)| x - a * m).collect();
            let exact = ranked(rows.iter().map(|r| dot(q, r)).enumerate().collect());
            let near = ranked(centred.iter().map(|r| -(hamming(&qc[..bits], &r[..bits]) as f32)).enumerate().collect());
            let pool = &near[..(n / keep_share).min(n)];
            let pre = ranked(
                pool.iter()
                    .map(|&i| {
                        (i, if by_sign { sign_score(&qc, &centred[i]) } else { -(hamming(&qc, &centred[i]) as f32) })
                    })
                    .collect(),
            );
            let rescored = ranked(pre[..keep.min(pre.len())].iter().map(|&i| (i, dot(q, &rows[i]))).collect());
            kept += rescored[..10].iter().filter(|i| exact[..10].contains(i)).count();
        }
        let r = kept as f64 / (10 * queries.len()) as f64;
        let rank = if by_sign { "sign score" } else { "Hamming, all bits" };
        println!("| first {bits} bits | 1/{keep_share} | {rank} | 1/{rescore} | {r:.4} |");
    }
}

/// The number of components whose signs differ between the query and the row.
fn hamming(q: &[f32], row: &[f32]) -> usize {
    q.iter().zip(row).filter(|(x, r)| (**x >= 0.0) != (**r >= 0.0)).count()
}
