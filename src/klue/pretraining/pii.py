"""Find personal information in Korean text and replace it with consistent pseudonyms of the same shape.

The KLUE corpus was pseudonymised before pretraining (paper section 3); this module gives users that step.
Kinds found (`PII_KINDS`):
    rrn       resident registration numbers (YYMMDD-GNNNNNN, a valid date and gender digit)
    phone     mobile, landline and +82 numbers (not 15xx/16xx/18xx company numbers)
    email     e-mail addresses
    card      card numbers (4-4-4-4 / 4-6-5 groups, or 15-16 digits that pass the Luhn check)
    account   bank account numbers: hyphenated or 10-14 digit runs near a bank / account word
    url       URLs of social, blog and profile sites with a personal id, or with an id-like query key
    address   road-name and lot-number street addresses (district + road/neighbourhood + number)
    name      person names: Kiwi proper nouns that start with a Korean surname (or a given NER model's PS)

Replacements keep kind and shape: a phone number stays a valid-looking phone number of the same pattern
(prefix and separators kept), an RRN gets a valid date, the same gender digit and a valid check digit,
a card number passes Luhn, a name becomes a plausible Korean name of the same length, an address keeps
its city and district and gets another road and number. Within one document the same original always
maps to the same replacement. Pseudonyms are drawn from a random generator seeded per document by the
run's seed, in order of appearance, never from the original's value: a pseudonym reveals nothing about
the original, and an unseeded run uses a fresh random seed.

Nothing here writes or logs an original. Files are pseudonymised by pii_parallel.py (`pseudonymise_files`):
streamed, spread over processes or a Ray cluster with the same output bytes; its reports hold counts by
kind only.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from klue.pretraining.morphemes import MorphemeSplitter

PiiKind = Literal["rrn", "phone", "email", "card", "account", "url", "address", "name"]
PII_KINDS: tuple[str, ...] = ("rrn", "phone", "email", "card", "account", "url", "address", "name")


@dataclass(frozen=True, order=True)
class PiiSpan:
    start: int
    end: int
    kind: str


# ---------------------------------------------------------------- regular patterns
_NOT_DIGIT_BEFORE = r"(?<![\d\-.])"
_NOT_DIGIT_AFTER = r"(?![\d\-]|\.\d)"
_RRN = re.compile(_NOT_DIGIT_BEFORE + r"(\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\s?-\s?([1-8])\d{6}"
                  + _NOT_DIGIT_AFTER)
_PHONE = re.compile(
    r"(?<![\d\w+])(?:\+82[-. ]?(?:\(0\))?1[016789]|\+82[-. ]?(?:\(0\))?(?:2|[3-6][1-5])"
    r"|01[016789]|\(0(?:2|[3-6][1-5])\)|0(?:2|[3-6][1-5])|070|050\d)"
    r"(?:[-. ]|\) ?)?\d{3,4}[-. ]?\d{4}" + _NOT_DIGIT_AFTER)
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_CARD_GROUPED = re.compile(_NOT_DIGIT_BEFORE + r"(?:\d{4}([- ])\d{4}\1\d{4}\1\d{4}|\d{4}([- ])\d{6}\2\d{5})"
                           + _NOT_DIGIT_AFTER)
_LONG_DIGITS = re.compile(_NOT_DIGIT_BEFORE + r"\d{10,16}" + _NOT_DIGIT_AFTER)
_HYPHEN_DIGITS = re.compile(_NOT_DIGIT_BEFORE + r"\d{2,6}(?:-\d{2,8}){1,3}" + _NOT_DIGIT_AFTER)
_URL = re.compile(r"(?:https?://|www\.)[A-Za-z0-9\-._~:/?#\[\]@!$&'*+,;=%]+")
_ACCOUNT_CONTEXT = re.compile(r"계좌|은행|입금|송금|이체|예금주|뱅크|농협|국민|신한|우리|하나|기업|새마을|우체국|수협|"
                              r"씨티|부산은행|대구은행|토스|카카오")
_CARD_CONTEXT = re.compile(r"카드|card|결제", re.IGNORECASE)

# Sites whose first path segment (or a marked segment) is a person's id.
_PROFILE_HOSTS = ("blog.naver.com", "m.blog.naver.com", "instagram.com", "facebook.com", "twitter.com", "x.com",
                  "github.com", "youtube.com", "tiktok.com", "velog.io", "brunch.co.kr", "blog.daum.net",
                  "tistory.com", "linkedin.com", "threads.net", "band.us", "open.kakao.com", "story.kakao.com")
_ID_QUERY_KEYS = ("id", "uid", "user", "userid", "user_id", "member", "memberid", "mid", "blogid", "nickname")
_NON_ID_SEGMENTS = {"", "watch", "channel", "c", "user", "in", "p", "pages", "groups", "search", "explore",
                    "hashtag", "intent", "home", "share", "results", "post", "reel", "status", "me"}

# ---------------------------------------------------------------- addresses
_PROVINCE = (r"(?:서울|부산|대구|인천|광주|대전|울산|세종)(?:특별시|광역시|특별자치시|시)?|"
             r"(?:경기|강원|충북|충남|전북|전남|경북|경남|제주|충청북|충청남|전라북|전라남|경상북|경상남)(?:도|특별자치도)?")
_DISTRICT = r"[가-힣]{1,5}(?:시|군|구)"
_ROAD = r"[가-힣0-9]{1,10}(?:로|길)(?:\s?\d{1,3}(?:번)?길)?"
_LOT = r"[가-힣0-9]{1,6}(?:동|리|가)"
_NUMBER = r"(?:산\s?)?\d{1,5}(?:-\d{1,5})?(?:번지)?"
_UNIT = r"(?:,?\s?\d{1,4}동)?(?:\s?\d{1,5}호)?(?:\s?\d{1,3}층)?"
_ADDRESS = re.compile(
    rf"(?<![가-힣])(?:(?:{_PROVINCE})\s?)?(?:{_DISTRICT}\s?){{1,2}}(?:{_LOT}\s?)?(?:{_ROAD}|{_LOT})\s?{_NUMBER}{_UNIT}"
    rf"(?![\d가-힣]*(?:명|개|원|년|월|일|시|분|초|층\b|세|번\s?출구|%))")
_LOT_ONLY = re.compile(rf"(?<![가-힣])[가-힣]{{1,5}}동\s?\d{{1,5}}(?:-\d{{1,5}})?번지{_UNIT}")

# ---------------------------------------------------------------- names
def _words(*parts: str) -> list[str]:
    """Space-separated word lists, kept readable in the source."""
    return " ".join(parts).split()


# The common Korean surnames (statistics Korea 2015: the top ~100 cover more than 99.9%), and compound ones.
SURNAMES_SINGLE = frozenset(_words(
    "김 이 박 최 정 강 조 윤 장 임 한 오 서 신 권 황 안 송 류 유 전 홍 고 문 양 손 배 백 허 남 심 노 하 곽 성 차 주",
    "우 구 민 진 지 엄 채 원 천 방 공 현 함 변 염 여 추 도 소 석 선 설 마 길 연 위 표 명 기 반 라 왕 금 옥 육 인",
    "맹 제 모 탁 국 어 은 편 용 예 경 봉 사 부 가 복 태 목 형 피 두 감 음 빈 동 온 호 범 좌 팽 승 간 상 갈 단 견 당"))
SURNAMES_COMPOUND = frozenset(_words("남궁 황보 제갈 선우 독고 사공 서문 동방 어금 망절"))
# Words after a name that make it one (titles, honorifics, roles).
_TITLES = frozenset(_words(
    "씨 님 군 양 옹 선생 선생님 교수 교수님 기자 대표 의원 장관 대통령 총리 회장 사장 부장 과장 차장 대리 팀장",
    "실장 국장 원장 소장 감독 선수 박사 변호사 작가 위원장 위원 시장 지사 군수 구청장 이사 이사장 사원 주임",
    "간호사 의사 판사 검사 목사 신부 스님 씨가 씨는 씨의 씨를 씨와 씨에게 학생 씨께 어머니 아버지 할머니",
    "할아버지 고객 고객님 환자 상무 전무 부회장 부사장 총장 처장 단장 편집장 앵커 특파원 연구원 수석 책임",
    "선임 주무관 사무관 경위 경감 경사 순경 대위 중위 병장 일병 이병 상병"))
_NAME_TAGS = ("NNP",)
# Last syllables of 3-syllable proper nouns that name places and organisations, not people ("강남구", "신사동").
_PLACE_SUFFIXES = frozenset(_words(
    "구 시 군 읍 면 리 로 길 역 당 청 도 동 산 강 천 섬 항 대 국 원 관 사 처 부 교 실 소 점 성 전"))
# Syllables common in given names (used to draw pseudonyms, and as evidence when no title follows).
_GIVEN_SYLLABLES = _words(
    "민 서 지 현 준 우 윤 수 영 진 하 은 연 예 도 주 호 성 재 유 혜 희 경 정 원 승 채 동 혁 훈 빈 아 나 린 율 건",
    "태 상 철 석 기 광 명 선 미 숙 순 옥 자 식 환 규 범 찬 결 온 솔 별 비 람 슬 새 한 인")
_NAME_SYLLABLES = frozenset(_GIVEN_SYLLABLES) | frozenset(_words(
    "용 길 세 훈 열 근 섭 종 창 형 완 익 일 남 녀 란 화 향 애 임 옥 분 례 덕 복 신 보 효 문 중 범 욱 웅 택 환",
    "혜 소 다 시 리 이 라 가 해 겸 찬 휘 록 운 곤 강 구 국 권 균 근 금 래 련 령 룡 륜 만 모 무 묵 배 백 병 봉 부",
    "삼 생 송 식 심 안 양 엽 오 왕 요 위 의 장 전 제 조 종 직 집 천 청 초 춘 충 치 탁 판 평 표 풍 필 학 항 헌",
    "형 홍 황 회 후 흠 흥 희"))
# Proper nouns that look like names but are places, organisations or historical figures (not personal data).
_NON_PERSON_NNP = frozenset(_words(
    "대한민국 한국어 한국인 한국전력 조선일보 동아일보 한겨레 경향신문 한국은행 신한은행 국민은행 우리은행",
    "하나은행 이마트 홈플러스 한라산 백두산 김포공항 인천공항 제주도 강원도 경기도 전라도 경상도 충청도",
    "이순신 세종대왕"))
_SURNAME_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("김", 215), ("이", 147), ("박", 84), ("최", 47), ("정", 44), ("강", 23), ("조", 21), ("윤", 21), ("장", 20),
    ("임", 17), ("한", 15), ("오", 15), ("서", 15), ("신", 15), ("권", 14), ("황", 14), ("안", 14), ("송", 13),
    ("류", 12), ("전", 11), ("홍", 11), ("고", 9), ("문", 9), ("양", 9), ("손", 9), ("배", 8), ("백", 8), ("허", 6))

NameFinder = Callable[[str], Sequence[tuple[int, int]]]
"""Person-name spans (start, end) in a text: e.g. the PS entities of an NER model. A finder may also have
`prefetch(texts)`, which `pseudonymise_files` calls with each chunk's texts first (batched inference)."""


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _url_has_personal_id(url: str) -> bool:
    body = re.sub(r"^(?:https?://)?", "", url)
    host, _, rest = body.partition("/")
    host = host.lower().removeprefix("www.").split(":")[0]
    path, _, query = rest.partition("?")
    keys = {part.split("=", 1)[0].lower() for part in query.split("&") if "=" in part}
    if keys & set(_ID_QUERY_KEYS):
        return True
    if host.endswith(".tistory.com") and host != "www.tistory.com":
        return True  # the blog name is the sub-domain
    if not any(host == h or host.endswith("." + h) for h in _PROFILE_HOSTS):
        return False
    segments = [s for s in path.split("/") if s]
    first = segments[0] if segments else ""
    return first.lower() not in _NON_ID_SEGMENTS or (first.lower() in {"user", "c", "in"} and len(segments) > 1)


def _trim_url(url: str) -> str:
    return url.rstrip(".,;:!?'\")]")


@dataclass
class PiiDetector:
    """Finds PII spans. `splitter` (Kiwi) finds names; `name_finder` (e.g. an NER model) replaces it."""

    splitter: MorphemeSplitter | None = field(default_factory=MorphemeSplitter)
    name_finder: NameFinder | None = None
    kinds: tuple[str, ...] = PII_KINDS

    def detect(self, text: str) -> list[PiiSpan]:
        found: list[PiiSpan] = []
        for kind, finder in (("email", self._emails), ("url", self._urls), ("rrn", self._rrns),
                             ("card", self._cards), ("phone", self._phones), ("account", self._accounts),
                             ("address", self._addresses), ("name", self._names)):
            if kind in self.kinds:
                found.extend(PiiSpan(s, e, kind) for s, e in finder(text, found))
        return _non_overlapping(found)

    # Each finder gets the spans found so far and skips what overlaps them (order above = priority).
    @staticmethod
    def _emails(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        return [m.span() for m in _EMAIL.finditer(text)]

    @staticmethod
    def _urls(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        def personal(match: re.Match[str]) -> tuple[int, int] | None:
            url = _trim_url(match.group())
            return (match.start(), match.start() + len(url)) if _url_has_personal_id(url) else None

        return _rule_spans(text, (_URL,), taken, personal)

    @staticmethod
    def _rrns(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        return [m.span() for m in _RRN.finditer(text) if _free(*m.span(), taken)]

    @staticmethod
    def _cards(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        spans = [m.span() for m in _CARD_GROUPED.finditer(text) if _free(*m.span(), taken)]
        for match in _LONG_DIGITS.finditer(text):
            digits = match.group()
            if len(digits) in (15, 16) and _luhn_ok(digits) and _free(*match.span(), taken) \
                    and not digits.startswith("01"):
                spans.append(match.span())
        return spans

    @staticmethod
    def _phones(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        def phone(match: re.Match[str]) -> tuple[int, int] | None:
            digits = re.sub(r"\D", "", match.group())
            separated = bool(re.search(r"[-. )]", match.group()))
            return match.span() if separated or digits.startswith("01") else None

        return _rule_spans(text, (_PHONE,), taken, phone)

    @staticmethod
    def _accounts(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        def account(match: re.Match[str]) -> tuple[int, int] | None:
            digits = re.sub(r"\D", "", match.group())
            context = text[max(0, match.start() - 20):match.start()]
            near_bank = _ACCOUNT_CONTEXT.search(context) and not _CARD_CONTEXT.search(context[-8:])
            return match.span() if 10 <= len(digits) <= 14 and near_bank else None

        return _rule_spans(text, (_HYPHEN_DIGITS, _LONG_DIGITS), taken, account)

    @staticmethod
    def _addresses(text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        def trimmed(match: re.Match[str]) -> tuple[int, int]:
            start, end = match.span()
            while end > start and text[end - 1] in " ,":
                end -= 1
            return start, end

        return _rule_spans(text, (_ADDRESS, _LOT_ONLY), taken, trimmed)

    def _names(self, text: str, taken: Sequence[PiiSpan]) -> list[tuple[int, int]]:
        if self.name_finder is not None:
            return [(s, e) for s, e in self.name_finder(text) if _free(s, e, taken)]
        if self.splitter is None:
            return []
        tokens = self.splitter.spans(text)
        spans: list[tuple[int, int]] = []
        for index, (start, end, form, tag) in enumerate(tokens):
            if tag not in _NAME_TAGS or not _free(start, end, taken) or text[start:end] != form:
                continue
            following = _following_word(text, tokens, index)
            if _looks_like_name(form, following):
                spans.append((start, end))
        spans.extend(span for span in _split_names(text, tokens) if _fresh(*span, taken, spans))
        # Kiwi sometimes cuts an unfamiliar name ("조현|우 기자"): a surname-initial 3-syllable word
        # right before a title is a name however it was analysed.
        for match in re.finditer(r"(?<![가-힣])([가-힣]{3})(?=\s?([가-힣]+))", text):
            start, end = match.span(1)
            if _fresh(start, end, taken, spans) and match.group(1)[0] in SURNAMES_SINGLE \
                    and _starts_with_title(match.group(2)) and match.group(1) not in _NON_PERSON_NNP:
                spans.append((start, end))
        return spans


_NOUN_TAGS = ("NNP", "NNG", "NNB", "NR")
_PRECEDING_CUES = ("예금주", "성명", "이름", "담당자", "수신인", "발신인", "작성자", "신청인", "보호자")


def _split_names(text: str, tokens: Sequence[tuple[int, int, str, str]]) -> list[tuple[int, int]]:
    """Names Kiwi cut into several nouns ("고은|비가", "백|승|우의", "배|수지"): a word that starts with
    three syllables of nouns (one a proper noun, or both given syllables usual ones) and then a particle
    or copula or nothing, whose first syllable is a surname."""
    spans = []
    index = 0
    while index < len(tokens):
        start = tokens[index][0]
        if start > 0 and not text[start - 1].isspace() and text[start - 1] not in "(\"'“‘":
            index += 1
            continue
        run = index
        while run < len(tokens) and tokens[run][3] in _NOUN_TAGS and tokens[run][0] == (
                tokens[run - 1][1] if run > index else start):
            run += 1
        end = tokens[run - 1][1] if run > index else start
        form = text[start:end]
        nxt = tokens[run] if run < len(tokens) else None
        closes = nxt is None or nxt[0] > end or nxt[3].startswith("J") or nxt[3] == "VCP"
        preceding = text[max(0, start - 6):start].strip()
        cue = preceding.endswith(_PRECEDING_CUES) or preceding.endswith(tuple(c + "은" for c in _PRECEDING_CUES))
        if run - index >= 2 and len(form) == 3 and re.fullmatch(r"[가-힣]{3}", form) and closes \
                and form[0] in SURNAMES_SINGLE and form not in _NON_PERSON_NNP:
            has_proper = any(tokens[i][3] == "NNP" for i in range(index, run))
            usual = all(c in _NAME_SYLLABLES for c in form[1:])
            if usual and (has_proper or cue):
                spans.append((start, end))
        index = max(run, index + 1)
    return spans


def _following_word(text: str, tokens: Sequence[tuple[int, int, str, str]], index: int) -> str:
    """The morpheme right after token `index` (across at most one space), for title checks."""
    if index + 1 >= len(tokens):
        return ""
    end = tokens[index][1]
    start, _, form, _ = tokens[index + 1]
    return form if text[end:start].strip() == "" and start - end <= 1 else ""


def _starts_with_title(word: str) -> bool:
    return any(word.startswith(title) for title in _TITLES)


def _surname_length(form: str) -> int:
    if form[:2] in SURNAMES_COMPOUND and len(form) >= 3:
        return 2
    return 1 if form[:1] in SURNAMES_SINGLE else 0


def _looks_like_name(form: str, following: str) -> bool:
    if not re.fullmatch(r"[가-힣]{2,4}", form) or form in _NON_PERSON_NNP:
        return False
    surname = _surname_length(form)
    if surname == 0:
        return False
    given = len(form) - surname
    if following in _TITLES or _starts_with_title(following):
        return 1 <= given <= 2
    # Without a title: surname + two given-name syllables (one at least a usual one), not a
    # place/organisation-like ending ("강남구", "유튜브" are proper nouns but not names).
    return given == 2 and form[-1] not in _PLACE_SUFFIXES and any(c in _NAME_SYLLABLES for c in form[surname:])


def _free(start: int, end: int, taken: Sequence[PiiSpan]) -> bool:
    return all(end <= span.start or start >= span.end for span in taken)


def _fresh(start: int, end: int, taken: Sequence[PiiSpan], found: Sequence[tuple[int, int]]) -> bool:
    """Free of the earlier finders' spans (`taken`) and of those this finder has `found` so far."""
    return _free(start, end, taken) and all(end <= s or start >= e for s, e in found)


def _rule_spans(text: str, patterns: Sequence[re.Pattern[str]], taken: Sequence[PiiSpan],
                rule: Callable[[re.Match[str]], tuple[int, int] | None]) -> list[tuple[int, int]]:
    """The spans `rule` makes of the patterns' matches (None: not this kind), pattern by pattern, each kept
    when free of the earlier finders' spans and of the ones kept before it."""
    spans: list[tuple[int, int]] = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            span = rule(match)
            if span is not None and _fresh(*span, taken, spans):
                spans.append(span)
    return spans


def _non_overlapping(spans: Sequence[PiiSpan]) -> list[PiiSpan]:
    """Earlier finders win; then left to right."""
    kept: list[PiiSpan] = []
    for span in spans:
        if span.end > span.start and _free(span.start, span.end, kept):
            kept.append(span)
    return sorted(kept)


# ---------------------------------------------------------------- pseudonyms
_ROAD_NAMES = ("중앙로", "시청로", "한빛로", "문화로", "평화로", "새싹로", "은행나무길", "푸른숲길", "햇살로", "누리로",
               "미래로", "가람로", "솔빛길", "하늘로", "청림로", "보람로")
_LOT_NAMES = ("가온동", "새빛동", "누리동", "한울동", "다솜동", "보람동", "청솔동", "하늬동")


def _random_digits(rng: random.Random, template: str, keep_prefix: int = 0) -> str:
    """Replace the digits of `template` (separators kept), keeping its first `keep_prefix` digits."""
    out, seen = [], 0
    for char in template:
        if char.isdigit():
            out.append(char if seen < keep_prefix else str(rng.randrange(10)))
            seen += 1
        else:
            out.append(char)
    return "".join(out)


def _pseudo_phone(rng: random.Random, original: str) -> str:
    digits = re.sub(r"\D", "", original)
    keep = 3 if digits.startswith(("01", "070", "050", "82")) else (2 if digits.startswith("02") else 3)
    if digits.startswith("82"):
        keep = 4
    fake = _random_digits(rng, original, keep)
    # The first digit of the subscriber part is never 0 in real numbers.
    positions = [i for i, c in enumerate(fake) if c.isdigit()]
    if len(positions) > keep:
        first = positions[keep]
        fake = fake[:first] + str(rng.randrange(1, 10)) + fake[first + 1:]
    return fake


def _pseudo_rrn(rng: random.Random, original: str) -> str:
    gender = re.sub(r"\D", "", original)[6]
    century = 1900 if gender in "1256" else 2000
    while True:
        year = rng.randrange(0, 100) if century == 1900 else rng.randrange(0, 25)
        month, day = rng.randrange(1, 13), rng.randrange(1, 29)
        body = f"{year:02d}{month:02d}{day:02d}{gender}" + "".join(str(rng.randrange(10)) for _ in range(5))
        weights = (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)
        check = (11 - sum(int(d) * w for d, w in zip(body, weights, strict=True)) % 11) % 10
        digits = body + str(check)
        if digits != re.sub(r"\D", "", original):
            break
    separator = original[6:-7]
    return digits[:6] + separator + digits[6:]


def _pseudo_card(rng: random.Random, original: str) -> str:
    digits = re.sub(r"\D", "", original)
    body = [digits[0]] + [str(rng.randrange(10)) for _ in range(len(digits) - 2)]
    for check in range(10):
        if _luhn_ok("".join(body) + str(check)):
            break
    fake = iter("".join(body) + str(check))
    return "".join(next(fake) if c.isdigit() else c for c in original)


def _pseudo_email(rng: random.Random, original: str) -> str:
    local, _, domain = original.partition("@")
    public = {"naver.com", "gmail.com", "daum.net", "hanmail.net", "kakao.com", "nate.com", "hotmail.com",
              "yahoo.com", "outlook.com", "icloud.com", "korea.kr"}
    letters = "abcdefghijklmnopqrstuvwxyz"
    fake_local = rng.choice(letters) + "".join(rng.choice(letters + "0123456789") for _ in range(max(3, len(local)) - 1))
    return f"{fake_local}@{domain if domain.lower() in public else 'example.com'}"


def _pseudo_url(rng: random.Random, original: str) -> str:
    def fake_id(match: re.Match[str]) -> str:
        value = match.group(0)
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(rng.choice(alphabet) if c.isalnum() else c for c in value)

    scheme, sep, rest = original.partition("://")
    if not sep:
        scheme, rest = "", original
    host, slash, tail = rest.partition("/")
    path, qmark, query = tail.partition("?")
    if host.lower().endswith(".tistory.com"):
        host = re.sub(r"^[^.]+", fake_id, host)
    segments = path.split("/")
    for index, segment in enumerate(segments):
        if segment and segment.lower() not in _NON_ID_SEGMENTS:
            segments[index] = re.sub(r"[^@]+", fake_id, segment, count=1) if not segment.startswith("@") \
                else "@" + re.sub(r".+", fake_id, segment[1:])
            break
    parts = []
    for part in query.split("&") if query else []:
        key, eq, value = part.partition("=")
        parts.append(f"{key}={re.sub(r'.+', fake_id, value)}" if eq and key.lower() in _ID_QUERY_KEYS and value
                     else part)
    prefix = f"{scheme}{sep}" if sep else ""
    return f"{prefix}{host}{slash}{'/'.join(segments)}{qmark}{'&'.join(parts)}"


def _pseudo_name(rng: random.Random, original: str) -> str:
    surname_len = _surname_length(original) or 1
    given_len = max(1, len(original) - surname_len)
    names, weights = zip(*_SURNAME_WEIGHTS, strict=True)
    surname = rng.choices(names, weights=weights)[0] if surname_len == 1 else rng.choice(sorted(SURNAMES_COMPOUND))
    given = "".join(rng.choice(_GIVEN_SYLLABLES) for _ in range(given_len))
    return surname + given


def _pseudo_address(rng: random.Random, original: str) -> str:
    def road(match: re.Match[str]) -> str:
        return rng.choice(_ROAD_NAMES)

    def lot(match: re.Match[str]) -> str:
        return rng.choice(_LOT_NAMES)

    fake = re.sub(r"[가-힣0-9]{1,10}(?:로|길)(?:\s?\d{1,3}(?:번)?길)?(?=\s?(?:산\s?)?\d)", road, original, count=1)
    if fake == original:
        fake = re.sub(r"[가-힣0-9]{1,6}(?:동|리|가)(?=\s?(?:산\s?)?\d)", lot, original, count=1)
    out = []
    for index, char in enumerate(fake):
        if char.isdigit():
            leading = index == 0 or not fake[index - 1].isdigit()
            out.append(str(rng.randrange(1, 10) if leading else rng.randrange(10)))
        else:
            out.append(char)
    return "".join(out)


def _pseudo_account(rng: random.Random, original: str) -> str:
    return _random_digits(rng, original)


_MAKERS: dict[str, Callable[[random.Random, str], str]] = {
    "rrn": _pseudo_rrn, "phone": _pseudo_phone, "email": _pseudo_email, "card": _pseudo_card,
    "account": _pseudo_account, "url": _pseudo_url, "address": _pseudo_address, "name": _pseudo_name}


@dataclass
class PseudonymTable:
    """Original -> pseudonym for one document (never persisted)."""

    rng: random.Random
    table: dict[tuple[str, str], str] = field(default_factory=dict)

    def pseudonym(self, kind: str, original: str) -> str:
        key = (kind, original)
        if key not in self.table:
            used = set(self.table.values())
            for _ in range(20):
                candidate = _MAKERS[kind](self.rng, original)
                if candidate != original and candidate not in used:
                    break
            self.table[key] = candidate
        return self.table[key]


@dataclass(frozen=True)
class PseudonymisedDocument:
    text: str
    counts: Counter[str]


def pseudonymise(text: str, detector: PiiDetector, rng: random.Random) -> PseudonymisedDocument:
    """Replace every PII span of `text`; the same original gets the same pseudonym within this text."""
    spans = detector.detect(text)
    table = PseudonymTable(rng)
    pieces: list[str] = []
    last = 0
    counts: Counter[str] = Counter()
    for span in spans:
        pieces.append(text[last:span.start])
        pieces.append(table.pseudonym(span.kind, text[span.start:span.end]))
        counts[span.kind] += 1
        last = span.end
    pieces.append(text[last:])
    return PseudonymisedDocument("".join(pieces), counts)


def document_rng(seed: int, file_index: int, document_index: int) -> random.Random:
    """The generator for one document: depends on the run seed and position only (not on the text)."""
    return random.Random(f"{seed}:{file_index}:{document_index}")


@dataclass(frozen=True)
class SpanScores:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return 100.0 * self.tp / (self.tp + self.fp) if self.tp + self.fp else 100.0

    @property
    def recall(self) -> float:
        return 100.0 * self.tp / (self.tp + self.fn) if self.tp + self.fn else 100.0


def score_spans(gold: Sequence[Sequence[PiiSpan]], pred: Sequence[Sequence[PiiSpan]],
                kind: str | None = None) -> SpanScores:
    """Exact (start, end, kind) matches, micro over texts; `kind` restricts to one kind."""
    tp = fp = fn = 0
    for gold_spans, pred_spans in zip(gold, pred, strict=True):
        g = {s for s in gold_spans if kind is None or s.kind == kind}
        p = {s for s in pred_spans if kind is None or s.kind == kind}
        tp += len(g & p)
        fp += len(p - g)
        fn += len(g - p)
    return SpanScores(tp, fp, fn)
