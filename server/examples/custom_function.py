import torch


class Cube(torch.autograd.Function):
    """y = x³ with a backward rule written by hand."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)          # what backward will need
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2          # d(x³)/dx = 3x²


x = torch.tensor(2.0, requires_grad=True)
y = Cube.apply(x)
y.backward()
print(x.grad)                             # 3 · 2² = 12
