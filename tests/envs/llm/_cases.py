"""Reward cases scored by both tdrl and the TorchRL 0.14.1 recorder (``record_torchrl_golden.py``)."""

from __future__ import annotations

GSM8K_CASES = [
    ("<think>48 / 2 = 24, 48 + 24 = 72</think> <answer>72</answer>", "48/2 = 24\n48+24 = 72\n#### 72"),
    ("<think>x</think><answer>$1,000.00</answer>", "... #### 1000"),
    ("<answer>71</answer>", "#### 72"),
    ("<think>only thinking</think>", "#### 72"),
    ("The answer is 72.", "#### 72"),
    ("<think>a</think><answer>3.50</answer><|im_end|>", "#### 3.5"),
    ("<answer> 18. </answer>", "Janet sells 16 - 3 - 4 = 9 duck eggs. 9 * 2 = 18 #### 18"),
]

COUNTDOWN_CASES = [
    ("<think>2*3=6, 6*4=24</think><answer>2 * 3 * 4</answer>", "target=24, numbers=2,3,4"),
    ("<answer>(2 + 4) * 4</answer>", "target=24, numbers=2,3,4"),
    ("<answer>(25 + 3) * 4</answer>", "target=112, numbers=25,3,4,7"),
    ("<answer>25 + 3 + 4 + 7</answer>", "target=38, numbers=25,3,4,7"),
    ("<answer>import os</answer>", "target=1, numbers=1"),
    ("<answer>10 / (5 - 5)</answer>", "target=2, numbers=10,5,5"),
    ("<think>no answer</think>", "target=3, numbers=1,2"),
    ("<answer>7 / 2 * 2</answer>", "target=7, numbers=7,2,2"),
]

COUNTDOWN_SEEDS = [(0, 2, 9), (1, 4, 100), (7, 3, 20)]
