//! The word lists entity extraction consults. Each is compact and general (none is fitted to a
//! corpus); where a list comes from a public source, the source is named.

/// Words that end an organisation's name.
pub(super) const ORG_SUFFIXES: &[&str] = &[
    "Inc",
    "Corp",
    "Corporation",
    "Ltd",
    "Llc",
    "LLC",
    "GmbH",
    "Labs",
    "Foundation",
    "University",
    "Company",
    "Co",
    "Group",
    "Technologies",
    "Systems",
    "Software",
    "Institute",
    "AG",
    "SA",
    "PLC",
    "Plc",
];

/// Honorifics: a capitalised name right after one is a person's.
pub(super) const TITLES: &[&str] = &["Mr", "Mrs", "Ms", "Miss", "Dr", "Prof", "Professor", "Sir", "Dame", "Mx"];

/// Capitalised words that start sentences, greet, date or head sections: never part of a name.
pub(super) const NOT_NAMES: &[&str] = &[
    "A",
    "An",
    "The",
    "This",
    "That",
    "These",
    "Those",
    "There",
    "Then",
    "Than",
    "Here",
    "It",
    "Its",
    "I",
    "We",
    "You",
    "He",
    "She",
    "They",
    "Our",
    "Your",
    "My",
    "His",
    "Her",
    "Their",
    "If",
    "When",
    "While",
    "Where",
    "What",
    "Why",
    "How",
    "Who",
    "Which",
    "And",
    "But",
    "Or",
    "So",
    "Yet",
    "For",
    "Nor",
    "In",
    "On",
    "At",
    "By",
    "To",
    "Of",
    "From",
    "With",
    "Without",
    "As",
    "Is",
    "Are",
    "Was",
    "Were",
    "Be",
    "Do",
    "Does",
    "Did",
    "Not",
    "No",
    "Yes",
    "All",
    "Any",
    "Some",
    "Each",
    "Every",
    "Both",
    "Also",
    "Just",
    "Please",
    "Thanks",
    "Thank",
    "Hi",
    "Hello",
    "Hey",
    "Dear",
    "Regards",
    "Best",
    "Cheers",
    "Re",
    "Fwd",
    "Fw",
    "Subject",
    "Date",
    "Cc",
    "Bcc",
    "Sent",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Today",
    "Tomorrow",
    "Yesterday",
    "Meeting",
    "Notes",
    "Note",
    "Project",
    "Team",
    "Update",
    "Summary",
    "Agenda",
    "Action",
    "Items",
    "Next",
    "Steps",
    "Introduction",
    "Overview",
    "Conclusion",
    "Chapter",
    "Section",
    "Table",
    "Figure",
    "Appendix",
    "New",
    "Old",
    "First",
    "Last",
    "After",
    "Before",
    "During",
    "Since",
    "Until",
    "Can",
    "Could",
    "Will",
    "Would",
    "Should",
    "Must",
    "Might",
    "Let",
    "Lets",
    "Let's",
    "Ok",
    "Okay",
    "Sure",
    "Good",
    "Great",
    "Morning",
    "Afternoon",
    "Evening",
    "Users",
    "User",
];

/// English stop words: the Snowball project's English list (snowballstem.org, `stop.txt`),
/// with the contractions' apostrophes dropped as the tokenizer drops them, and a few words
/// of the same kind that it lacks.
const STOP_WORDS: &str = "i me my myself we our ours ourselves you your yours yourself yourselves he him his \
    himself she her hers herself it its itself they them their theirs themselves what which who whom this that \
    these those am is are was were be been being have has had having do does did doing would should could ought \
    im youre hes shes its were theyre ive youve weve theyve id youd hed shed wed theyd ill youll hell shell well \
    theyll isnt arent wasnt werent hasnt havent hadnt doesnt dont didnt wont wouldnt shant shouldnt cant cannot \
    couldnt mustnt lets thats whos whats heres theres whens wheres whys hows a an the and but if or because as \
    until while of at by for with about against between into through during before after above below to from up \
    down in out on off over under again further then once here there when where why how all any both each few \
    more most other some such no nor not only own same so than too very also just can will may might must shall \
    upon yet still even ever every many much within without across along among around however therefore thus \
    whether either neither like unlike via etc";

/// Whether `w` (lowercase) is a stop word.
pub(super) fn is_stop_word(w: &str) -> bool {
    use std::collections::HashSet;
    use std::sync::OnceLock;
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.split_whitespace().collect()).contains(w)
}

/// Generic words: what people say about anything, so no subject to file notes under. The
/// frequent verbs of everyday English (`think`, `want`, `know`, `feel`), its vague nouns
/// (`time`, `thing`, `lot`, `stuff`, `list`, `idea`), its evaluative adjectives and fillers
/// (`great`, `really`, `maybe`), and the words every kind of software text uses whatever it is
/// about (`file`, `error`, `version`, `support`, `issue`). A word's `-ing` and `-s` forms fold
/// to it before the check.
const GENERIC_WORDS: &str = "able accept accord achieve across actual actually add added adding advance afford     agree ahead allow almost alone already alright always amazing amount answer anybody anymore anyone anything     anyway anywhere appear apply appreciate area aren arrive aside ask aspect attempt avoid awesome away awful back     basically become begin believe belong best better beyond big bit bother bring build busy call calm care careful     carry case catch cause certain certainly chance change check choose clear clearly close come comes coming     common completely consider continue cool correct could couple course cover crazy create current cut dare day     days deal decide definitely describe deserve detail different difficult done doing double down drop during     each early easily easy else elsewhere end enjoy enough entire entry error especially even event eventually ever     every everybody everyone everything everywhere exactly example excited exciting expect experience explain     extra fact fair fairly fall familiar fantastic far feature feel feeling felt field figure file fill final     finally find fine finish first fit fix flag follow forget form forward free friend full fully fun funny further     general generally get gets getting give given glad goes going gone gonna good got gotta great group grow guess     guy guys half hand handle happen happy hard hardly hate have head hear heard help hey high hold hope hopefully     hour huge idea imagine important include including indeed instead interest interested interesting issue item     keep kind kinda kinds knew know known large last late lately later latest lead learn least leave less let level longer     life light like likely line list listen little live long look looking lose lost lot lots love lovely low made     main major make making manage many matter maybe mean meaning meant meet mention mind minute miss moment month     months mostly move much must name near nearly need never new nice night nobody none normal normally nothing     notice number object obviously offer often okay once open option order other others otherwise part particular     particularly pass past people perfect perhaps person pick piece place plan play please plenty point possible     possibly pretty probably problem proper properly provide pull push quick quickly quite rather reach read ready     real really reason receive recent recently remember remove report require rest result return right run said     same saw say saying says see seem seems seen send sense serious set several share short show side similar     simple simply since situation small some somebody someone something sometimes somewhat soon sorry sort sound     speak special spend stand start started stay step stick still stop story straight stuff such suggest super     support suppose sure surely take taking talk talking tell tend terrible thank thanks thing things think     thinking though thought through time times tiny today together told took total totally touch toward tried     true truly try trying turn type understand unless update upon usage use used useful user using usual usually     value various version very wait walk want wanted wants watch way ways week weeks well went whatever whenever     whole wish without wonder wonderful word work worked working world worry worth wow write wrong yeah year years     yes";

/// Whether `w` (lowercase, plurals folded) is a generic word, its `-ing` form included.
pub(super) fn is_generic_word(w: &str) -> bool {
    use std::collections::HashSet;
    use std::sync::OnceLock;
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let set = SET.get_or_init(|| GENERIC_WORDS.split_whitespace().collect());
    if set.contains(w) {
        return true;
    }
    // `thinking` → think, `making` → make, `getting` → get.
    w.strip_suffix("ing").is_some_and(|stem| {
        let undoubled = stem.len() >= 3 && stem.as_bytes()[stem.len() - 1] == stem.as_bytes()[stem.len() - 2];
        set.contains(stem)
            || set.contains(format!("{stem}e").as_str())
            || undoubled && set.contains(&stem[..stem.len() - 1])
    })
}

/// Common given names: a compact selection of the most frequent given names in the US Social
/// Security Administration's national baby-name data (ssa.gov/oact/babynames, births
/// 1940–2000) and in the national name statistics of the larger European countries. A
/// capitalised pair starting with one of these reads as a person's name.
const FIRST_NAMES: &str = "aaron adam adrian alan albert alex alexander alexandra alexis alice alicia alison \
    amanda amber amy andrea andreas andrew andy angela ann anna anne anthony antonio arthur ashley barbara ben \
    benjamin bernard beth betty bill billy bob bobby brandon brenda brian bruce bryan carl carlos carol caroline \
    catherine charles charlie chris christian christina christine christopher cindy claire claudia colin craig \
    cynthia daniel danielle david deborah debra dennis derek diana diane donald donna dorothy douglas dylan edward \
    elena elizabeth emily emma eric erik eva evelyn frank fred frederick gabriel gary george gerald giovanni \
    gloria grace greg gregory hannah harold harry heather helen henry isabel jack jacob james jamie jan jane janet \
    jason jean jeff jeffrey jennifer jeremy jerry jessica jim joan joe johannes john jonathan jordan jose joseph \
    joshua joyce juan judith judy julia julie justin karen katherine kathleen kathy keith kelly kenneth kevin kim \
    kyle larry laura lauren lawrence linda lisa louis luca lucas luis maria marie marco margaret mark martha \
    martin mary matthew matthias max megan melissa michael michelle mike nancy nathan nicholas nicole nina olivia \
    oliver pamela patricia patrick paul peter philip philippe pierre rachel ralph raymond rebecca richard robert \
    roger ronald rose roy russell ruth ryan sam samantha samuel sandra sara sarah scott sean sebastian sharon \
    shirley simon sophie stefan stephanie stephen steve steven susan tanya teresa thomas tim timothy tom tony \
    tyler victoria vincent virginia walter wayne william wolfgang zachary";

/// Whether `w` (any case) is a common given name.
pub(super) fn is_first_name(w: &str) -> bool {
    use std::collections::HashSet;
    use std::sync::OnceLock;
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| FIRST_NAMES.split_whitespace().collect()).contains(w.to_lowercase().as_str())
}

/// `@words` that are code, not people: Python decorators, Java/Kotlin annotations, Javadoc,
/// JSDoc and Doxygen tags, CSS and Sass at-rules (compared without case).
const CODE_AT_WORDS: &str = "dataclass property staticmethod classmethod abstractmethod cached_property \
    lru_cache cache wraps contextmanager override overload final fixture pytest mark total_ordering \
    deprecated suppresswarnings functionalinterface safevarargs test before after beforeeach aftereach \
    beforeall afterall autowired component service repository controller restcontroller entity table column \
    id bean configuration inject injectable nullable nonnull notnull transactional getter setter data builder \
    jvmstatic jvmfield composable param params return returns throws throw exception see since author version \
    link linkplain type typedef example todo private public protected internal async callback module export \
    description class constructor inheritdoc brief file note warning code literal value media import font-face \
    keyframes charset supports tailwind apply layer use forward mixin include extend if else each for while \
    function content default event fires implements interface member memberof namespace readonly static summary \
    template this yields emits ts-ignore ts-expect-error ts-nocheck";

pub(super) fn is_code_at_word(w: &str) -> bool {
    use std::collections::HashSet;
    use std::sync::OnceLock;
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| CODE_AT_WORDS.split_whitespace().collect()).contains(w.to_ascii_lowercase().as_str())
}

/// `#words` that are preprocessor directives and template keywords (`#include`, `{{#each}}`).
pub(super) const CODE_HASH_WORDS: &[&str] = &[
    "include",
    "define",
    "undef",
    "if",
    "ifdef",
    "ifndef",
    "elif",
    "else",
    "endif",
    "pragma",
    "error",
    "warning",
    "line",
    "import",
    "region",
    "endregion",
    "each",
    "with",
    "unless",
    "end",
    "!",
    "!/usr/bin/env",
];

/// File-name extensions: `icon@2x.png` is a file, not an address.
pub(super) const FILE_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "js", "mjs", "ts", "tsx", "jsx", "py", "rs", "go", "rb", "java",
    "kt", "md", "txt", "json", "yaml", "yml", "toml", "lock", "html", "htm", "css", "scss", "zip", "gz", "tar", "tgz",
    "so", "dll", "exe", "wasm", "pdf", "csv", "xml", "sh", "bin",
];

/// Address local parts of automated senders (`noreply@`, `notifications@`, `jira@`).
pub(super) const BOT_LOCAL_PARTS: &[&str] = &[
    "noreply",
    "no-reply",
    "donotreply",
    "do-not-reply",
    "notifications",
    "notification",
    "notify",
    "mailer-daemon",
    "daemon",
    "postmaster",
    "bounce",
    "bounces",
    "bot",
    "robot",
    "automation",
    "alerts",
    "jira",
    "jenkins",
    "buildbot",
    "github-actions",
    "ci",
    "builds",
    // Mailing-list managers.
    "mailman",
    "listserv",
    "majordomo",
    "sympa",
];

/// Words in a sender's name that say it is automated (`Mail Delivery Daemon`, `renovate[bot]`).
pub(super) const BOT_NAME_WORDS: &[&str] =
    &["bot", "robot", "noreply", "no-reply", "daemon", "notifications", "automation", "automated", "mailer-daemon"];
