//! How text becomes index terms, as a tantivy tokenizer for indexing and as plain functions
//! for queries and snippets.
//!
//! Words are maximal runs of alphanumeric characters, lowercased; the `s` and `t` after an
//! apostrophe (`Alice's`, `don't`) are dropped, words longer than [`MAX_WORD`] bytes are
//! skipped, and every word is stemmed with Snowball English (Porter2: the `frostem` crate,
//! which tantivy's own stemmer wraps, with only its English stemmer compiled in). Words are
//! folded before stemming: accents come off (`Réunion` → `reunion`), full-width and other
//! compatibility forms become their plain letters (`ＡＢＣ` → `abc`), and a few letters
//! without a decomposition are spelled out (`ß` → `ss`), so either spelling finds the other;
//! offsets stay those of the original text, so a snippet marks the word as written.
//!
//! Stop words stay in the index and are dropped from queries instead, unless a query has
//! nothing else: then `to be or not to be` is answered from the same field. Next to other
//! words they would only let a chunk match on `my` or `how` and so rank above chunks that
//! only the vector ranker finds; the query list ([`QUERY_STOP_WORDS`]) is therefore wider
//! than Lucene's: pronouns, auxiliaries and question words too. Highlights never mark one,
//! nor the other words of the usual English stop lists or the function words of five other
//! European languages ([`UNMARKED_WORDS`]), which queries keep.
//! (Dropping Lucene's list at index time measured the same on the development set: nDCG@10
//! 0.697 both ways.)
//!
//! Han, kana and Hangul write no space between words, so a run of them is read as its
//! overlapping pairs of characters (`配管工` → `配管`, `管工`), as Lucene's CJK analyzer does: a
//! word is then found inside a sentence without a dictionary of the language.
//!
//! Identifiers, e-mail addresses, versions, paths and URLs are split by the word rule
//! (`snake_case_name` → `snake case name`, `1.2.3` → `1 2 3`), so each part stays findable
//! on its own. The same tokenizer also emits each such token whole, as a compound: a piece of
//! text between whitespace, brackets, quotes or list punctuation, trimmed of punctuation
//! around it, that still has a joiner inside (`snake_case_name`, `foo.bar` from `foo.bar()`,
//! `alice@example.com`, `1.2.3`, `https://example.com/a`), lowercased. A query naming one
//! matches it whole as well as by its parts (the Lucene idea of keeping the original next to
//! the word-delimited parts). Hyphens do not join: `state-of-the-art` and `IL-6` are
//! ordinary words. `CamelCase` is one word.

use std::borrow::Cow;
use std::collections::HashMap;

use frostem::{Algorithm, Stemmer};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use unicode_normalization::UnicodeNormalization;

use crate::util::FxBuild;

/// Longer words (encoded blobs, hashes) are not indexed by the word analyzer.
pub(crate) const MAX_WORD: usize = 40;
/// Longer compounds (long URLs, paths) are not indexed whole.
const MAX_COMPOUND: usize = 128;

/// Lucene's English stop words (the list its `EnglishAnalyzer` uses).
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Words dropped from a query that has others, and never highlighted: Lucene's list plus
/// the pronouns, auxiliaries and modal verbs, determiners and question words of everyday
/// questions ("how do I look after my starter?", "who can let us in?"), and the light verb
/// `get` ("how do I get into the router settings?"). Words that carry meaning
/// in a claim (`more`, `after`, `against`, `only`) are not on it, nor `may`, which is a month
/// too (it is only never marked).
#[rustfmt::skip]
const QUERY_STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by",
    "can", "could", "did", "do", "does", "doing", "for", "from", "get", "gets", "getting", "got", "had", "has",
    "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "itself", "just", "me", "might", "must", "my", "myself", "no", "not", "of", "on",
    "or", "our", "ours", "ourselves", "shall", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "to", "us", "was",
    "we", "were", "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "would", "you",
    "your", "yours", "yourself", "yourselves",
];

/// Words a highlight never marks besides [`QUERY_STOP_WORDS`], though a query keeps them for
/// ranking: the rest of the usual English stop lists (prepositions and adverbs such as
/// `after`, `more`, `only`, which carry meaning in a claim, and the stems contractions leave,
/// `don`, `isn`), and the articles, pronouns and prepositions of French, German, Spanish,
/// Italian, Portuguese and Dutch that are not also English words or abbreviations (`die`,
/// `son`, `il` as in IL-6, `es` as in ES cells are not on it). A snippet of a French mail
/// marks `réunion`, never `de`.
#[rustfmt::skip]
const UNMARKED_WORDS: &[&str] = &[
    "aber", "above", "across", "after", "again", "against", "ain", "along", "already", "although", "always",
    "among", "amongst", "anche", "another", "anyone", "anything", "anyway", "anywhere", "aren", "around", "au",
    "auch", "aux", "avec", "because", "before", "behind", "bei", "below", "beside", "besides", "between", "beyond",
    "both", "cannot", "ce", "ces", "cette", "che", "com", "como", "couldn", "d", "dans", "das", "dass", "de",
    "degli", "dei", "del", "della", "delle", "dello", "dem", "der", "des", "di", "dich", "didn", "dir", "doesn",
    "don", "down", "du", "during", "each", "een", "ein", "eine", "einem", "einen", "einer", "eines", "either",
    "el", "ela", "ele", "ellas", "elle", "elles", "ellos", "else", "elsewhere", "em", "enough", "est", "esta",
    "este", "et", "etc", "eux", "ever", "every", "everyone", "everything", "everywhere", "except", "few",
    "further", "gli", "hadn", "hasn", "haven", "hence", "het", "however", "ich", "ihr", "ils", "indeed", "isn",
    "ist", "je", "la", "las", "le", "les", "leur", "leurs", "ll", "los", "lui", "m", "ma", "mais", "many", "may",
    "meanwhile", "mes", "mich", "mightn", "mir", "mit", "more", "most", "much", "mustn", "nao", "needn", "neither",
    "nel", "nella", "never", "nevertheless", "nicht", "niet", "nobody", "noch", "none", "nor", "nos", "nothing",
    "notre", "nous", "now", "nowhere", "nur", "o", "oder", "off", "often", "once", "only", "onto", "os", "other",
    "otherwise", "ou", "ought", "out", "over", "own", "para", "pas", "per", "perhaps", "pero", "por", "pour", "qu",
    "que", "qui", "quite", "rather", "re", "same", "seu", "several", "shan", "shouldn", "sich", "since", "sind",
    "somehow", "someone", "something", "sometimes", "somewhere", "sono", "sont", "sua", "sur", "sus", "thereby",
    "therefore", "though", "through", "thus", "too", "toward", "towards", "um", "uma", "una", "unas", "und",
    "under", "une", "unless", "uno", "unos", "uns", "until", "up", "upon", "ve", "very", "via", "von", "voor",
    "vos", "votre", "vous", "wasn", "wenn", "weren", "whatever", "whenever", "whereas", "whereby", "wherever",
    "whether", "while", "whoever", "wie", "wir", "within", "without", "won", "wouldn", "yet", "zijn", "zu", "zum",
    "zur",
];

/// The function words (articles, pronouns, prepositions, conjunctions, auxiliaries and question
/// words) of six other languages, folded as queries are (`où` is `ou`): what a query written in
/// one of them drops besides [`QUERY_STOP_WORDS`]. Many are English words too (`die`, `son`,
/// `also`), so a list applies only to a query that [reads as its language](QueryStops::of).
#[rustfmt::skip]
const FRENCH: &[&str] = &[
    "a", "ai", "as", "au", "aux", "avait", "avec", "avez", "avoir", "avons", "c", "ca", "car", "ce", "ceci", "cela",
    "ces", "cet", "cette", "chez", "combien", "comment", "d", "dans", "de", "des", "dois", "doit", "donc", "du",
    "elle", "elles", "en", "entre", "es", "est", "et", "etaient", "etait", "ete", "etes", "etre", "faire", "fait",
    "faut", "il", "ils", "j", "je", "l", "la", "laquelle", "le", "lequel", "les", "leur", "leurs", "lui", "m", "ma",
    "mais", "me", "mes", "mon", "n", "ne", "ni", "nos", "notre", "nous", "on", "ont", "ou", "par", "pas", "peut",
    "peux", "plus", "pour", "pourquoi", "puis", "qu", "quand", "que", "quel", "quelle", "quelles", "quels", "qui",
    "quoi", "s", "sa", "sans", "se", "ses", "sommes", "son", "sont", "sous", "suis", "sur", "t", "ta", "te", "tes",
    "ton", "tu", "un", "une", "va", "vais", "vers", "vos", "votre", "vous", "y",
];

#[rustfmt::skip]
const GERMAN: &[&str] = &[
    "aber", "am", "an", "auch", "auf", "aus", "bei", "bin", "bis", "bist", "das", "dass", "dein", "deine", "deinen",
    "dem", "den", "denn", "der", "des", "dich", "die", "dir", "du", "durch", "ein", "eine", "einem", "einen",
    "einer", "eines", "er", "es", "euch", "euer", "eure", "fur", "gegen", "habe", "haben", "hast", "hat", "hatte",
    "hatten", "ich", "ihm", "ihn", "ihnen", "ihr", "ihre", "ihren", "im", "in", "ist", "kann", "kannst", "kein",
    "keine", "keinen", "konnen", "man", "mein", "meine", "meinem", "meinen", "meiner", "mich", "mir", "mit", "muss",
    "mussen", "musst", "nach", "nicht", "noch", "ob", "oder", "ohne", "seid", "sein", "seine", "seinen", "sich",
    "sie", "sind", "so", "soll", "sollen", "uber", "um", "und", "uns", "unser", "unsere", "unseren", "unter", "vom",
    "von", "wann", "war", "waren", "warum", "was", "welche", "welchen", "welcher", "welches", "wem", "wen", "wenn",
    "wer", "werden", "wie", "wieso", "wir", "wird", "wo", "woher", "wohin", "wurde", "zu", "zum", "zur",
];

#[rustfmt::skip]
const SPANISH: &[&str] = &[
    "a", "adonde", "al", "aquel", "como", "con", "cual", "cuales", "cuando", "cuanta", "cuantas", "cuanto",
    "cuantos", "de", "debe", "debo", "del", "desde", "donde", "e", "el", "ella", "ellas", "ello", "ellos", "en",
    "entre", "era", "eran", "es", "esa", "esas", "ese", "eso", "esos", "esta", "estan", "estar", "estas", "este",
    "esto", "estos", "estoy", "fue", "fueron", "ha", "habia", "hacer", "hacia", "hago", "han", "has", "hasta",
    "hay", "he", "hemos", "la", "las", "le", "les", "lo", "los", "mas", "me", "mi", "mis", "ni", "no", "nos",
    "nosotras", "nosotros", "nuestra", "nuestras", "nuestro", "nuestros", "o", "os", "para", "pero", "por", "puede",
    "puedo", "que", "quien", "quienes", "se", "ser", "sin", "sobre", "son", "su", "sus", "te", "tenemos", "tengo",
    "tiene", "tienen", "tu", "tus", "u", "un", "una", "unas", "unos", "usted", "ustedes", "vosotros", "y", "yo",
];

#[rustfmt::skip]
const ITALIAN: &[&str] = &[
    "a", "abbiamo", "agli", "ai", "al", "all", "alla", "alle", "allo", "avere", "avete", "c", "che", "chi", "ci",
    "come", "con", "cosa", "da", "dai", "dal", "dalla", "dalle", "degli", "dei", "del", "dell", "della", "delle",
    "dello", "deve", "devo", "di", "dove", "e", "ed", "era", "erano", "essere", "faccio", "fare", "fra", "gli",
    "ha", "hai", "hanno", "ho", "i", "il", "in", "io", "l", "la", "le", "lei", "lo", "loro", "lui", "ma", "mi",
    "mia", "mie", "miei", "mio", "nei", "nel", "nella", "nelle", "noi", "non", "nostra", "nostri", "nostro", "o",
    "per", "perche", "piu", "posso", "puo", "quale", "quali", "quando", "quanta", "quanti", "quanto", "quella",
    "quello", "questa", "queste", "questi", "questo", "sei", "si", "siamo", "siete", "sono", "stata", "stato", "su",
    "sua", "sue", "sul", "sulla", "suo", "suoi", "ti", "tra", "tu", "tua", "tuo", "tuoi", "un", "una", "uno", "vi",
    "voi", "vostro",
];

#[rustfmt::skip]
const PORTUGUESE: &[&str] = &[
    "a", "ao", "aos", "aquele", "as", "ate", "com", "como", "da", "das", "de", "deve", "devo", "do", "dos", "e",
    "ela", "elas", "ele", "eles", "em", "entre", "era", "eram", "essa", "esse", "esta", "estao", "estar", "estas",
    "este", "estes", "estou", "eu", "faco", "fazer", "foi", "foram", "ha", "isso", "isto", "lhe", "lhes", "mais",
    "mas", "me", "meu", "meus", "minha", "minhas", "na", "nao", "nas", "nem", "no", "nos", "nossa", "nossas",
    "nosso", "nossos", "o", "onde", "os", "ou", "para", "pela", "pelas", "pelo", "pelos", "pode", "por", "porque",
    "posso", "quais", "qual", "quando", "quanta", "quantas", "quanto", "quantos", "que", "quem", "sao", "se", "sem",
    "ser", "seu", "seus", "sobre", "sua", "suas", "te", "tem", "temos", "tenho", "teu", "tu", "tua", "um", "uma",
    "umas", "uns", "voce", "voces",
];

#[rustfmt::skip]
const DUTCH: &[&str] = &[
    "aan", "ben", "bent", "bij", "dat", "de", "deze", "die", "dit", "door", "een", "en", "er", "geen", "haar",
    "had", "hadden", "heb", "hebben", "hebt", "heeft", "het", "hij", "hoe", "hoeveel", "hun", "ik", "in", "is",
    "je", "jij", "jouw", "jullie", "kan", "kunnen", "maar", "me", "met", "mij", "mijn", "moet", "moeten", "naar",
    "niet", "nog", "of", "om", "ons", "onze", "ook", "op", "over", "te", "tegen", "tot", "u", "uit", "uw", "van",
    "voor", "waar", "waarom", "wanneer", "want", "waren", "was", "wat", "we", "welk", "welke", "werd", "wie", "wij",
    "worden", "wordt", "ze", "zij", "zijn", "zonder",
];

/// The lists above, each under its language's name.
const LANGUAGES: [(&str, &[&str]); 6] =
    [("fr", FRENCH), ("de", GERMAN), ("es", SPANISH), ("it", ITALIAN), ("pt", PORTUGUESE), ("nl", DUTCH)];

/// The words a query drops when it has others: the English [query stop words](is_query_stop_word),
/// and the function words of the languages the query is written in when that is one of six
/// others. A query reads as French, say, when at least two of its distinct words are French
/// function words that are not English stop words, and more of them than English stop words:
/// "où est la clé de secours ?" drops `ou est la de`, "when does my son play?" keeps `son`.
/// A tie between languages (`la de mi` is Spanish and Italian) drops the words of each.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct QueryStops {
    /// One bit per entry of [`LANGUAGES`].
    languages: u8,
}

impl QueryStops {
    pub fn of(query: &str) -> QueryStops {
        let mut words: Vec<String> = Vec::new();
        for_each_word(query, |_, _, lower| {
            if !words.iter().any(|w| w == lower) {
                words.push(lower.to_string());
            }
        });
        let english = words.iter().filter(|w| is_query_stop_word(w)).count();
        let counts = LANGUAGES.map(|(_, list)| {
            words.iter().filter(|w| !is_query_stop_word(w) && list.binary_search(&w.as_str()).is_ok()).count()
        });
        let best = counts.iter().copied().max().unwrap_or(0);
        if best < 2 || best <= english {
            return QueryStops::default();
        }
        let languages = counts.iter().enumerate().filter(|&(_, &c)| c == best).fold(0u8, |bits, (i, _)| bits | 1 << i);
        QueryStops { languages }
    }

    /// Whether a query drops `lower` (lowercased and folded, not stemmed) when it has other words.
    pub fn contains(&self, lower: &str) -> bool {
        is_query_stop_word(lower)
            || LANGUAGES
                .iter()
                .enumerate()
                .any(|(i, (_, list))| self.languages & 1 << i != 0 && list.binary_search(&lower).is_ok())
    }

    /// Whether the query reads as the language `code` (ISO 639-1: `fr`, `de`, `es`, `it`, `pt`,
    /// `nl`).
    pub fn reads_as(&self, code: &str) -> bool {
        LANGUAGES.iter().enumerate().any(|(i, (c, _))| *c == code && self.languages & 1 << i != 0)
    }
}

/// Lucene's English stop words: what [`word_stems`] leaves out.
pub(crate) fn is_stop_word(lower: &str) -> bool {
    STOP_WORDS.contains(&lower)
}

/// A word a query drops when it has others, and a highlight never marks (`lower` is
/// lowercased and folded, not stemmed).
pub(crate) fn is_query_stop_word(lower: &str) -> bool {
    QUERY_STOP_WORDS.binary_search(&lower).is_ok()
}

/// `query`'s words that are not [query stop words](QueryStops), as written, each followed by a space; the
/// query itself when it has no other word.
pub(crate) fn without_stop_words(query: &str) -> Cow<'_, str> {
    let stops = QueryStops::of(query);
    let mut kept = String::with_capacity(query.len());
    for_each_word(query, |s, e, lower| {
        if !stops.contains(lower) {
            kept.push_str(&query[s..e]);
            kept.push(' ');
        }
    });
    if kept.is_empty() { Cow::Borrowed(query) } else { Cow::Owned(kept) }
}

/// A word a highlight never marks (`lower` is lowercased and folded, not stemmed): a query stop
/// word, or one of [`UNMARKED_WORDS`].
pub(crate) fn is_unmarked_word(lower: &str) -> bool {
    is_query_stop_word(lower) || UNMARKED_WORDS.binary_search(&lower).is_ok()
}

/// The index form of one lowercased word.
pub(crate) fn stem(lower: &str) -> Cow<'_, str> {
    Stemmer::new(Algorithm::English).stem(lower)
}

/// Characters that end a compound as whitespace does: brackets, quotes and list punctuation
/// never belong inside an identifier, address, version or URL.
fn is_compound_break(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | '"' | '\'' | '`' | ',' | ';' | '|' | '*')
        || matches!(c, '\u{2018}' | '\u{2019}' | '\u{201c}' | '\u{201d}')
}

/// Punctuation that joins the parts of an identifier, address, version, path or URL.
/// Hyphens and apostrophes are not joiners: they join ordinary words (`state-of-the-art`,
/// `IL-6`, `don't`), which the word analyzer already finds by their parts.
fn is_joiner(c: char) -> bool {
    !c.is_alphanumeric() && !matches!(c, '-' | '\u{2010}' | '\u{2011}' | '\u{2013}' | '\u{2014}')
}

/// Lowercases and folds `text` into `out`: compatibility decomposition (full-width and
/// other compatibility forms to their plain letters), Latin, Greek and Cyrillic accents
/// dropped (only the combining diacritics block: marks that spell vowels in other scripts
/// stay), and a few letters without a decomposition spelled out.
fn lowercase_into(text: &str, ascii: bool, out: &mut String) {
    out.clear();
    if ascii {
        out.push_str(text);
        out.make_ascii_lowercase();
        return;
    }
    let decomposed = text.chars().flat_map(char::to_lowercase).nfkd();
    for c in decomposed.filter(|c| !('\u{300}'..='\u{36f}').contains(c)) {
        match c {
            'ß' => out.push_str("ss"),
            'æ' => out.push_str("ae"),
            'œ' => out.push_str("oe"),
            'ø' => out.push('o'),
            'đ' | 'ð' => out.push('d'),
            'ł' => out.push('l'),
            'ı' => out.push('i'),
            'þ' => out.push_str("th"),
            c => out.extend(c.to_lowercase()),
        }
    }
}

/// What a character is to [`scan`].
#[derive(Clone, Copy, PartialEq)]
enum Class {
    /// Part of a word.
    Alnum,
    /// Ends words and compounds.
    Break,
    /// Ends words; joins the parts of a compound.
    Joiner,
    /// Ends words; neither joins nor breaks a compound (hyphens, dashes).
    Other,
}

fn class_of(c: char) -> Class {
    if c.is_alphanumeric() {
        Class::Alnum
    } else if is_compound_break(c) {
        Class::Break
    } else if is_joiner(c) {
        Class::Joiner
    } else {
        Class::Other
    }
}

/// [`class_of`] for every ASCII character, looked up instead of computed on the hot path.
const ASCII_CLASS: [Class; 128] = {
    let mut t = [Class::Joiner; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8 as char;
        t[i] = if c.is_ascii_alphanumeric() {
            Class::Alnum
        } else if c.is_ascii_whitespace()
            || c == '\x0b'
            || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | '"' | '\'' | '`' | ',' | ';' | '|' | '*')
        {
            Class::Break
        } else if c == '-' {
            Class::Other
        } else {
            Class::Joiner
        };
        i += 1;
    }
    t
};

/// Han, kana and Hangul: scripts that write no space between words (Korean writes one between
/// phrases, which hold a word and its particles), so a run of them is not one word.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x1100..=0x11FF // Hangul Jamo
            | 0x3005..=0x3007 // 々 〆 〇
            | 0x3040..=0x30FF // Hiragana, Katakana
            | 0x3130..=0x318F // Hangul compatibility Jamo
            | 0x31F0..=0x31FF // Katakana phonetic extensions
            | 0x3400..=0x4DBF // CJK Extension A
            | 0x4E00..=0x9FFF // CJK Unified Ideographs
            | 0xA960..=0xA97F // Hangul Jamo Extended-A
            | 0xAC00..=0xD7FF // Hangul syllables, Jamo Extended-B
            | 0xF900..=0xFAFF // CJK compatibility ideographs
            | 0xFF66..=0xFF9F // half-width Katakana
            | 0x20000..=0x3134F // CJK Extensions B–G
    )
}

/// The words of an alphanumeric run `text[start..end]` that holds Han, kana or Hangul: each
/// stretch of those is read as its overlapping pairs of characters (`配管工が` → `配管`,
/// `管工`, `工が`; one character alone is itself), as Lucene's CJK analyzer reads them, so a
/// query finds a word inside a sentence without a dictionary; the stretches of other letters
/// and digits between them are words as usual.
fn cjk_words(text: &str, start: usize, end: usize, lower: &mut String, word: &mut impl FnMut(usize, usize, &str)) {
    let mut emit = |s: usize, e: usize| {
        lowercase_into(&text[s..e], false, lower);
        word(s, e, lower);
    };
    // The open stretch: where it starts, whether it is CJK, and the start of its last char.
    let mut open: Option<(usize, bool, usize)> = None;
    for (offset, c) in text[start..end].char_indices().chain(std::iter::once((end - start, ' '))) {
        let i = start + offset;
        let cjk = i < end && is_cjk(c);
        match open {
            Some((s, true, last)) if cjk => {
                emit(last, i + c.len_utf8());
                open = Some((s, true, i));
            }
            Some((_, kind, _)) if kind == cjk && i < end => {}
            _ => {
                match open {
                    Some((s, false, _)) if i - s <= MAX_WORD => emit(s, i),
                    // A lone CJK character is a word of its own.
                    Some((s, true, last)) if last == s => emit(s, i),
                    _ => {}
                }
                open = Some((i, cjk, i));
            }
        }
    }
}

/// One pass over `text` that calls `word(start, end, lowercased)` for every word (byte
/// offsets) and `compound(start, end, lowercased)` for every compound.
///
/// A word is a run of alphanumerics; the possessive `s` and contracted `t` after an
/// apostrophe and words longer than [`MAX_WORD`] are skipped. A compound is a piece between
/// breaks (whitespace, brackets, quotes, list punctuation), trimmed of the non-alphanumerics
/// around it, that has a joiner between two of its alphanumerics, at most
/// [`MAX_COMPOUND`] bytes long.
fn scan(text: &str, mut word: impl FnMut(usize, usize, &str), mut compound: impl FnMut(usize, usize, &str)) {
    let bytes = text.as_bytes();
    let is_ascii_alnum = |i: usize| bytes[i] < 0x80 && ASCII_CLASS[bytes[i] as usize] == Class::Alnum;
    let char_at = |i: usize| text[i..].chars().next().expect("a char starts here");
    let mut lower = String::new();
    let mut prev_apostrophe = false;
    // The current piece: its first alphanumeric, the end of its last one, whether it is
    // ASCII, whether a joiner came after an alphanumeric, and whether one sits between two.
    let mut first: Option<usize> = None;
    let mut last_end = 0;
    let mut piece_ascii = true;
    let mut pending = false;
    let mut joined = false;
    let mut flush_piece = |first: Option<usize>, last_end: usize, ascii: bool, joined: bool, lower: &mut String| {
        if let Some(s) = first
            && joined
            && last_end - s <= MAX_COMPOUND
        {
            lowercase_into(&text[s..last_end], ascii, lower);
            compound(s, last_end, lower);
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = is_ascii_alnum(i) || bytes[i] >= 0x80 && char_at(i).is_alphanumeric();
        if starts_word {
            // A word: ASCII alphanumerics in a tight loop, others decoded.
            let start = i;
            let mut ascii = true;
            loop {
                while i < bytes.len() && is_ascii_alnum(i) {
                    i += 1;
                }
                if i < bytes.len() && bytes[i] >= 0x80 {
                    let c = char_at(i);
                    if c.is_alphanumeric() {
                        ascii = false;
                        i += c.len_utf8();
                        continue;
                    }
                }
                break;
            }
            let w = &text[start..i];
            if !ascii && w.chars().any(is_cjk) {
                cjk_words(text, start, i, &mut lower, &mut word);
            } else if w.len() <= MAX_WORD && !(prev_apostrophe && matches!(w.as_bytes(), b"s" | b"t" | b"S" | b"T")) {
                lowercase_into(w, ascii, &mut lower);
                word(start, i, &lower);
            }
            if first.is_none() {
                first = Some(start);
                piece_ascii = true;
            }
            piece_ascii &= ascii;
            joined |= pending;
            pending = false;
            last_end = i;
            prev_apostrophe = false;
            continue;
        }
        let (class, len, apostrophe) = if bytes[i] < 0x80 {
            (ASCII_CLASS[bytes[i] as usize], 1, bytes[i] == b'\'')
        } else {
            let c = char_at(i);
            (class_of(c), c.len_utf8(), c == '\u{2019}')
        };
        if class == Class::Break {
            flush_piece(first.take(), last_end, piece_ascii, joined, &mut lower);
            (pending, joined) = (false, false);
        } else if first.is_some() {
            piece_ascii &= len == 1;
            pending |= class == Class::Joiner;
        }
        prev_apostrophe = apostrophe;
        i += len;
    }
    flush_piece(first, last_end, piece_ascii, joined, &mut lower);
}

/// Calls `emit(start, end, lowercased)` for every word of `text` (see [`scan`]).
pub(crate) fn for_each_word(text: &str, emit: impl FnMut(usize, usize, &str)) {
    scan(text, emit, |_, _, _| {});
}

/// The word stems of `text` without stop words, in order and repeated as often as they occur:
/// what a textbook English analyzer (Lucene's, say) would index, for baselines to compare with.
pub fn word_stems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |_, _, lower| {
        if !is_stop_word(lower) {
            out.push(stem(lower).into_owned());
        }
    });
    out
}

/// Calls `emit(start, end, lowercased)` for every compound of `text` (see [`scan`]).
pub(crate) fn for_each_compound(text: &str, emit: impl FnMut(usize, usize, &str)) {
    scan(text, |_, _, _| {}, emit);
}

/// The terms of a query: word stems (without [query stop words](is_query_stop_word), unless
/// there is nothing else) and
/// compounds, each deduplicated in order.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct QueryTerms {
    pub words: Vec<String>,
    pub compounds: Vec<String>,
}

impl QueryTerms {
    pub fn parse(query: &str) -> QueryTerms {
        let mut words: Vec<String> = Vec::new();
        let mut stops: Vec<String> = Vec::new();
        let dropped = QueryStops::of(query);
        for_each_word(query, |_, _, lower| {
            let list = if dropped.contains(lower) { &mut stops } else { &mut words };
            let s = stem(lower);
            if !list.iter().any(|w| *w == s) {
                list.push(s.into_owned());
            }
        });
        let mut compounds: Vec<String> = Vec::new();
        for_each_compound(query, |_, _, c| {
            if !compounds.iter().any(|x| x == c) {
                compounds.push(c.to_string());
            }
        });
        if words.is_empty() {
            words = stops;
        }
        QueryTerms { words, compounds }
    }
}

/// A token stream over tokens computed up front into a buffer the tokenizer keeps, so
/// that token strings are allocated once per tokenizer, not once per document.
pub(crate) struct BufferStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl TokenStream for BufferStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[derive(Clone, Default)]
struct Buffer {
    tokens: Vec<Token>,
    len: usize,
}

impl Buffer {
    fn push(&mut self, start: usize, end: usize, text: &str) {
        if self.len == self.tokens.len() {
            self.tokens.push(Token::default());
        }
        let t = &mut self.tokens[self.len];
        t.offset_from = start;
        t.offset_to = end;
        t.position = self.len;
        t.position_length = 1;
        t.text.clear();
        t.text.push_str(text);
        self.len += 1;
    }

    fn stream(&mut self) -> BufferStream<'_> {
        BufferStream { tokens: &mut self.tokens[..self.len], next: 0 }
    }
}

/// Stems of the words seen so far. Words repeat (a few thousand distinct ones make up most
/// of any text), and a lookup costs a fraction of running the stemmer, which allocates.
#[derive(Clone, Default)]
struct StemCache {
    stems: HashMap<Box<str>, Box<str>, FxBuild>,
}

/// Entries kept before the cache starts over (a few megabytes at most).
const STEM_CACHE_MAX: usize = 50_000;

impl StemCache {
    fn with_stem(&mut self, lower: &str, f: impl FnOnce(&str)) {
        // Snowball English leaves words of one or two letters as they are.
        if lower.len() <= 2 {
            return f(lower);
        }
        if let Some(s) = self.stems.get(lower) {
            return f(s);
        }
        if self.stems.len() >= STEM_CACHE_MAX {
            self.stems.clear();
        }
        let s: Box<str> = stem(lower).into();
        f(&s);
        self.stems.insert(lower.into(), s);
    }
}

/// The English analyzer as a tantivy tokenizer (name [`EnglishTokenizer::NAME`]): word
/// stems, then compounds.
#[derive(Clone, Default)]
pub(crate) struct EnglishTokenizer {
    buf: Buffer,
    cache: StemCache,
}

impl EnglishTokenizer {
    pub const NAME: &str = "oh_english";
}

impl Tokenizer for EnglishTokenizer {
    type TokenStream<'a> = BufferStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> BufferStream<'a> {
        let (cache, buf) = (&mut self.cache, std::cell::RefCell::new(&mut self.buf));
        buf.borrow_mut().len = 0;
        scan(
            text,
            |s, e, lower| cache.with_stem(lower, |stem| buf.borrow_mut().push(s, e, stem)),
            |s, e, compound| buf.borrow_mut().push(s, e, compound),
        );
        buf.into_inner().stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut t = EnglishTokenizer::default();
        let mut s = t.token_stream(text);
        let mut out = Vec::new();
        while let Some(tok) = s.next() {
            out.push(tok.text.clone());
        }
        out
    }

    fn compounds(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_compound(text, |_, _, c| out.push(c.to_string()));
        out
    }

    #[test]
    fn words_are_lowercased_and_stemmed() {
        assert_eq!(tokens("Developing developers develop"), ["develop", "develop", "develop"]);
        assert_eq!(tokens("The progenitors' cells"), ["the", "progenitor", "cell"]);
        assert_eq!(tokens("Alice's notes don't CamelCase"), ["alic", "note", "don", "camelcas"]);
        assert_eq!(tokens(&format!("ok {} ok", "x".repeat(41))), ["ok", "ok"]);
        assert_eq!(tokens("Über straße"), ["uber", "strass"]);
        // Compounds come whole as well as by their parts.
        assert_eq!(
            tokens("snake_case_name v1.2.3"),
            ["snake", "case", "name", "snake_case_name", "v1", "2", "3", "v1.2.3"]
        );
    }

    #[test]
    fn compounds_keep_identifiers_addresses_versions_and_urls() {
        let text = "Call foo.bar() with snake_case_name, mail Alice.Smith@Example.com about v1.2.3 \
                    (see https://example.com/a?b=1). Plain words, CamelCase, state-of-the-art and end.";
        assert_eq!(
            compounds(text),
            ["foo.bar", "snake_case_name", "alice.smith@example.com", "v1.2.3", "https://example.com/a?b=1"]
        );
        assert!(compounds("--release \"quoted\" #channel @alice IL-6 don't").is_empty());
    }

    #[test]
    fn the_ascii_table_agrees_with_the_character_classes() {
        for b in 0u8..128 {
            assert!(ASCII_CLASS[b as usize] == class_of(b as char), "byte {b}");
        }
        assert_eq!(tokens("Bob\u{2019}s caf\u{e9}\u{2019}s na\u{ef}ve"), ["bob", "cafe", "naiv"]);
    }

    #[test]
    fn the_stem_cache_answers_as_the_stemmer_does() {
        let mut cache = StemCache::default();
        for w in ["is", "us", "a", "12", "ok", "developing", "developing", "skies", "1990s", "ökonomie"] {
            let mut got = String::new();
            cache.with_stem(w, |s| got = s.to_string());
            assert_eq!(got, stem(w), "{w}");
        }
    }

    #[test]
    fn queries_drop_stop_words_unless_nothing_else_is_left() {
        let q = QueryTerms::parse("What is the developing role of IL-6 in parse_args()?");
        assert_eq!(q.words, ["develop", "role", "il", "6", "pars", "arg"]);
        // Hyphenated words are words; only code-like joiners make compounds.
        assert_eq!(q.compounds, ["parse_args"]);
        let q = QueryTerms::parse("to be or not to be");
        assert_eq!(q.words, ["to", "be", "or", "not"]);
        assert_eq!(QueryTerms::parse("?!"), QueryTerms::default());
        // Everyday questions keep only what they ask about; code keeps its compounds.
        let q = QueryTerms::parse("How do I take care of my bread yeast?");
        assert_eq!(q.words, ["take", "care", "bread", "yeast"]);
        let q = QueryTerms::parse("where is my_var set?");
        assert_eq!((q.words, q.compounds), (vec!["var".to_string(), "set".to_string()], vec!["my_var".to_string()]));
        assert_eq!(QueryTerms::parse("the who").words, ["the", "who"]);
    }

    #[test]
    fn a_query_without_its_stop_words_keeps_the_rest_as_written() {
        assert_eq!(without_stop_words("When is my language class?"), "language class ");
        assert_eq!(without_stop_words("Réunion de classe"), "Réunion de classe ");
        assert_eq!(without_stop_words("what's my_var?"), "var ");
        // Nothing but stop words, or no word at all: the query as it is.
        assert_eq!(without_stop_words("to be or not to be"), "to be or not to be");
        assert_eq!(without_stop_words("?!"), "?!");
    }

    /// The languages `query` reads as besides English.
    fn languages(query: &str) -> Vec<&'static str> {
        let stops = QueryStops::of(query);
        LANGUAGES.iter().map(|(code, _)| *code).filter(|code| stops.reads_as(code)).collect()
    }

    #[test]
    fn a_query_in_another_language_drops_its_function_words() {
        let words = |q: &str| QueryTerms::parse(q).words;
        assert_eq!(words("où est la clé de secours ?"), ["cle", "secour"]);
        assert_eq!(words("Wo ist der Schlüssel für die Garage?"), ["schlussel", "garag"]);
        assert_eq!(words("¿Dónde está mi pasaporte?"), ["pasaport"]);
        assert_eq!(words("waar is de reservesleutel van het huis?"), ["reservesleutel", "hui"]);
        assert_eq!(languages("la casa de mi madre"), ["es"]);
        assert_eq!(languages("dov'è la chiave di casa?"), ["it"]);
        // As Spanish as Italian: the function words of both go.
        assert_eq!(languages("la pizza e la pasta"), ["es", "it"]);
        assert_eq!(words("la pizza e la pasta"), ["pizza", "pasta"]);
        // English questions keep the words other languages would drop.
        assert_eq!(words("when does my son play the piano?"), ["son", "play", "piano"]);
        assert_eq!(words("why did Die Hard come out in summer?"), ["die", "hard", "come", "out", "summer"]);
        assert_eq!(QueryStops::of("meeting with de Vries about the la la land score"), QueryStops::default());
        // One foreign function word does not make a language.
        assert_eq!(words("Réunion de classe"), ["reunion", "de", "class"]);
        // Nothing but function words: the query as it is.
        assert_eq!(words("qui est là ?"), ["qui", "est", "la"]);
        assert_eq!(without_stop_words("où est la clé de secours ?"), "clé secours ");
        for (_, list) in LANGUAGES {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
    }

    #[test]
    fn the_query_stop_list_is_sorted_and_holds_lucenes() {
        assert!(QUERY_STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| is_query_stop_word(w)));
        assert!(UNMARKED_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(!UNMARKED_WORDS.iter().any(|w| is_query_stop_word(w)));
    }

    #[test]
    fn han_kana_and_hangul_are_read_in_overlapping_pairs() {
        // Kana with a voicing mark are folded (decomposed) as every word is.
        let folded = |words: &[&str]| -> Vec<String> {
            let mut out = String::new();
            words
                .iter()
                .map(|w| {
                    lowercase_into(w, false, &mut out);
                    out.clone()
                })
                .collect()
        };
        assert_eq!(
            tokens("明日配管工が来ます"),
            folded(&["明日", "日配", "配管", "管工", "工が", "が来", "来ま", "ます"])
        );
        // A query word inside a sentence shares its pairs.
        let query = tokens("配管工");
        assert!(query.iter().all(|q| tokens("明日配管工が来ます").contains(q)), "{query:?}");
        // Letters beside them stay words; a lone character is a word; the old limit on a
        // word's length no longer drops a long sentence.
        assert_eq!(tokens("iPhone用のケース 猫"), folded(&["iphon", "用の", "のケ", "ケー", "ース", "猫"]));
        let long = "東京都の区役所で住民票の写しを受け取るには本人確認書類が必要です";
        assert_eq!(tokens(long).len(), long.chars().count() - 1);
        // Korean: pairs within each phrase, so `배관공` finds `배관공이`.
        let ko = tokens("배관공이 내일 와요");
        assert!(tokens("배관공").iter().all(|q| ko.contains(q)), "{ko:?}");
        let mut words = Vec::new();
        for_each_word("猫と犬", |s, e, _| words.push((s, e)));
        assert_eq!(words, [(0, 6), (3, 9)]);
    }

    #[test]
    fn accents_and_widths_fold_and_offsets_stay_the_original_ones() {
        assert_eq!(tokens("Réunion de classe"), tokens("reunion de classe"));
        assert_eq!(tokens("ＲＥＵＮＩＯＮ ﬁle Ａｂｃ_ｄｅｆ"), tokens("reunion file abc_def"));
        assert_eq!(tokens("Ærø Łódź İstanbul"), ["aero", "lodz", "istanbul"]);
        // Marks that are vowels in other scripts are kept.
        let mut out = String::new();
        lowercase_into("हिन्दी", false, &mut out);
        assert_eq!(out, "हिन्दी");
        let mut words = Vec::new();
        for_each_word("une Réunion", |s, e, lower| words.push((s, e, lower.to_string())));
        assert_eq!(words, [(0, 3, "une".to_string()), (4, 12, "reunion".to_string())]);
    }
}
