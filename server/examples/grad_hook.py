import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
# called in backward() with y's gradient;
# what it returns flows on to x
y.register_hook(lambda grad: grad * 10)
z = (y ** 2).sum()
z.backward()
print(x.grad)  # 10 × [18, 36]
