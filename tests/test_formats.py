import pytest

from cooper_rl import verify
from cooper_rl.formats import ANSWER_STYLES, restyle


def test_restyle_every_style_keeps_the_answer():
    sol = "He has 3 + 4 = <<3+4=7>>7 apples.\n#### 7"
    for style in ANSWER_STYLES:
        text = restyle(sol, style, drop_calc=True)
        assert "<<" not in text and verify.verify(text, "7", "lenient")
        assert verify.verify(text, "7", "strict") == (style != "plain")  # plain has no answer marker
    assert restyle("no marker here", "hash") is None
    with pytest.raises(ValueError):
        restyle(sol, "haiku")
