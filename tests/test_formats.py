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


def test_plain_style_states_the_given_answer_not_a_number_containing_it():
    sol = "Everything costs 14352 + 829 = $15181.\nThe change is 15200 - 15181 = $19.\n#### 18"
    assert restyle(sol, "plain").endswith("So the result is 18.")  # "18" inside 15181 is not the answer
    assert restyle(sol.replace("#### 18", "#### 19"), "plain").endswith("= $19.")
